package web

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// pageFiles are the page templates, each with the files it needs beside
// its own templates/NAME.html; that file defines "content" and is parsed
// together with base.html, which defines "base", and partials.html.
var pageFiles = map[string][]string{
	"list":     nil,
	"attempt":  nil,
	"notfound": nil,
	"failures": nil,
	"log":      nil,
	"ladders":  nil,
	"ladder":   {"whatif.html"},
	"runbook":  nil,
	"suggest":  nil,
}

// parsePages parses every page template, the one place templates are
// parsed; every page has funcs and ladderFuncs.
func parsePages() map[string]*template.Template {
	base := template.Must(template.New("").Funcs(funcs).Funcs(ladderFuncs).ParseFS(templateFS, "templates/base.html", "templates/partials.html"))
	pages := map[string]*template.Template{}
	for name, extra := range pageFiles {
		files := []string{"templates/" + name + ".html"}
		for _, f := range extra {
			files = append(files, "templates/"+f)
		}
		pages[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, files...))
	}
	return pages
}

// funcs are the template helpers. None returns template.HTML: every value
// that reaches a page, log text above all, goes through html/template's
// escaping.
var funcs = template.FuncMap{
	"attemptURL":   attemptURL,
	"apiURL":       apiURL,
	"logURL":       func(id string) string { return attemptURL(id) + "/log" },
	"when":         displayTime,
	"clock":        clockTime,
	"hms":          hmsTime,
	"sinceStart":   sinceStart,
	"duration":     duration,
	"verdictClass": verdictClass,
	"findingClass": findingClass,
	"shapeValue":   shapeValue,
	"intp":         intPtrText,
	"firstErr":     firstErr,
	"ago":          func(t time.Time) string { return ago(t, time.Now()) },
	"logHead":      func() int { return domain.LogHead },
	"logTail":      func() int { return domain.LogTail },
	"selected":     func(a, b string) bool { return a == b },
	"in":           func(v string, list []string) bool { return slices.Contains(list, v) },
	"narrowURL":    narrowURL,
	"days":         days,
	"times":        times,
	"groupURL":     func(id string) string { return "/failures?group=" + id },
	"groupList":    func(id string) string { return "/?group=" + id },
	"hostName":     shownHost,
	"unitName":     unitName,
	"endedText":    endedText,
}

// pastedText is what a page says for a host or unit a log did not name
// (plain text pasted or replayed without journal fields).
const pastedText = "pasted text"

// shownHost is a host as pages show it: the words pastedText when the log
// named none.
func shownHost(host string) string {
	if host == "" {
		return pastedText
	}
	return host
}

// unitName is an attempt's unit as pages show it: the unit, else its
// container, else pastedText.
func unitName(unit, container string) string {
	switch {
	case unit != "":
		return unit
	case container != "":
		return container
	}
	return pastedText
}

// endedText is what the Ended field says of an attempt with no end in the
// log: a failed or stopped one did end, the log just does not say when;
// only a ready, running or provisional one may still run.
func endedText(v domain.Verdict) string {
	if v.IsFailure() || v == domain.VerdictStopped {
		return "not in the log (it ends first)"
	}
	return "still running"
}

// displayTime shows a time with the offset of its source, "" when unknown.
func displayTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05 -07:00")
}

// clockTime is a log line's stamp, to the millisecond.
func clockTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("2006-01-02 15:04:05.000")
}

// hmsTime is the time of day in the source's offset, for the timeline
// (the date and offset are in the page header).
func hmsTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format("15:04:05.000")
}

// sinceStart renders t relative to start: "+301.1 s".
func sinceStart(start, t time.Time) string {
	if start.IsZero() || t.IsZero() {
		return ""
	}
	return fmt.Sprintf("+%.1f s", t.Sub(start).Seconds())
}

// duration is how long the attempt ran, "" while running or when unknown.
func duration(a *domain.Attempt) string {
	if a.StartedAt.IsZero() || a.EndedAt.IsZero() {
		return ""
	}
	d := a.EndedAt.Sub(a.StartedAt)
	if d < time.Minute {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// verdictClass picks the badge colour: ready green, running blue, stopped
// grey, any failure red.
func verdictClass(v domain.Verdict) string {
	switch v {
	case domain.VerdictReady:
		return "ok"
	case domain.VerdictRunning:
		return "run"
	case domain.VerdictStopped, "":
		return "off"
	}
	return "fail"
}

// findingClass: findings that are never a root cause are warnings (amber),
// the others failures (red).
func findingClass(id string) string {
	for _, f := range domain.NonRootFindings {
		if f == id {
			return "warn"
		}
	}
	return verdictClass(domain.Verdict(id))
}

// shapeValue formats a shape value; byte sizes also get GiB, which is how
// engines print them.
func shapeValue(s domain.Shape, key string) string {
	v := s.String(key)
	if strings.HasSuffix(key, "_bytes") {
		if n, ok := s.Int(key); ok {
			return fmt.Sprintf("%s (%.2f GiB)", v, float64(n)/(1<<30))
		}
	}
	if m, ok := s[key].(map[string]any); ok {
		sub := domain.Shape(m)
		parts := make([]string, 0, len(m))
		for _, k := range sub.Keys() {
			parts = append(parts, k+"="+sub.String(k))
		}
		return strings.Join(parts, " ")
	}
	return v
}

func intPtrText(p *int) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(*p)
}

// firstErr is the index of the first error line of log (0 when none).
func firstErr(log []logLine) int {
	for i, l := range log {
		if l.ErrN == 1 {
			return i
		}
	}
	return 0
}

// ago is how long before now t was, in the largest whole unit: "3 days
// ago", "in 5 min" for a future time, "" when t is unknown.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, ""
	}
	var n int
	var unit string
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		n, unit = int(d/time.Minute), "min"
	case d < 48*time.Hour:
		n, unit = int(d/time.Hour), "h"
	case d < 60*24*time.Hour:
		n, unit = int(d/(24*time.Hour)), "days"
	case d < 2*365*24*time.Hour:
		n, unit = int(d/(30*24*time.Hour)), "months"
	default:
		n, unit = int(d/(365*24*time.Hour)), "years"
	}
	if suffix == "" {
		return fmt.Sprintf("in %d %s", n, unit)
	}
	return fmt.Sprintf("%d %s%s", n, unit, suffix)
}
