package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCommandHelp: every command's -h/--help lists its own flags on stdout
// and succeeds.
func TestCommandHelp(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"explain":    {"-format", "-o", "-rules"},
		"replay":     {"-db", "-rules", "-loki-url", "-loki-max-age", "-notes"},
		"serve":      {"-db", "-listen", "-journal-dir", "-journal-reader", "-allowed-hosts", "-max-connections"},
		"ladder":     {"-db", "-target", "-o"},
		"rules test": nil,
		"rules lint": nil,
	} {
		for _, h := range []string{"-h", "--help"} {
			out := runCmd(t, append(strings.Fields(cmd), h)...)
			if !strings.HasPrefix(out, "usage: analyzer "+cmd) {
				t.Errorf("%s %s: %q", cmd, h, out)
			}
			for _, f := range flags {
				if !strings.Contains(out, "  "+f+" ") && !strings.Contains(out, "  "+f+"\n") {
					t.Errorf("%s %s does not list %s", cmd, h, f)
				}
			}
		}
	}
}

// TestFlagsAfterFiles: flags may follow the files, -o is --format, and
// "--" ends the flags.
func TestFlagsAfterFiles(t *testing.T) {
	const day = "../../examples/dankclaw-day.journal.json"
	before := runCmd(t, "explain", "--format", "json", day)
	for _, args := range [][]string{{"explain", day, "--format", "json"}, {"explain", day, "-o", "json"}, {"explain", "-o=json", day}} {
		if got := runCmd(t, args...); got != before {
			t.Errorf("%v: output differs from explain --format json FILE", args)
		}
	}
	if err := run(t.Context(), []string{"explain", "--", "-o"}); err == nil || !strings.Contains(err.Error(), "-o") {
		t.Errorf(`explain -- -o: %v, want the file "-o" not found`, err)
	}
}

// TestVersion: --version prints the build's version and Go's.
func TestVersion(t *testing.T) {
	out := runCmd(t, "--version")
	if !strings.HasPrefix(out, "analyzer ") || !strings.Contains(out, " go1.") {
		t.Errorf("--version: %q", out)
	}
}

// TestParseWhen: --since reads what journalctl and kubectl read.
func TestParseWhen(t *testing.T) {
	loc := time.FixedZone("host", -7*3600)
	now := time.Date(2026, 12, 1, 16, 30, 0, 0, time.UTC) // 09:30 at the host
	for in, want := range map[string]time.Time{
		"2026-01-01T10:00:00Z": time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC),
		"2026-01-01":           time.Date(2026, 1, 1, 0, 0, 0, 0, loc),
		"2026-01-01 10:00":     time.Date(2026, 1, 1, 10, 0, 0, 0, loc),
		"2026-01-01 10:00:05":  time.Date(2026, 1, 1, 10, 0, 5, 0, loc),
		"today":                time.Date(2026, 12, 1, 0, 0, 0, 0, loc),
		"yesterday":            time.Date(2026, 11, 30, 0, 0, 0, 0, loc),
		"-1h":                  now.Add(-time.Hour),
		"1h30m":                now.Add(-90 * time.Minute),
		"now":                  now,
	} {
		got, err := parseWhen(in, now, loc)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "soon", "2026-13-01", "--1h"} {
		if _, err := parseWhen(bad, now, loc); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestExplainFilters: --failed, --unit, --verdict (any of several) and
// --since/--until narrow explain's attempts; the summary counts what is
// shown; an unknown verdict is a usage error naming the allowed ones.
func TestExplainFilters(t *testing.T) {
	files := []string{"../../examples/dankserver-night-ladder.journal.json", "../../examples/dankclaw-day.journal.json"}
	last := func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	for want, flags := range map[string][]string{
		"20 attempts: 8 ready, 12 failed (7 oom_graph_capture, 2 dynamo_constraint_violation, 2 oom_kv_alloc, 1 oom_runtime)": nil,
		"12 attempts: 12 failed (7 oom_graph_capture, 2 dynamo_constraint_violation, 2 oom_kv_alloc, 1 oom_runtime)":          {"--failed"},
		"7 attempts: 7 failed (4 oom_graph_capture, 2 dynamo_constraint_violation, 1 oom_runtime)":                            {"--failed", "--unit", "frank-primary.service"},
		"3 attempts: 3 failed (2 oom_kv_alloc, 1 oom_runtime)":                                                                {"--verdict", "oom_kv_alloc,oom_runtime"},
		"3 attempts: 1 ready, 2 failed (2 dynamo_constraint_violation)":                                                       {"--since", "2026-10-02T07:30:00Z", "--until", "2026-10-02T08:00:00Z"},
	} {
		if got := last(runCmd(t, append(append([]string{"explain"}, files...), flags...)...)); got != want {
			t.Errorf("explain %v: %q, want %q", flags, got, want)
		}
	}
	err := run(t.Context(), append([]string{"explain", "--verdict", "nonsense"}, files...))
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(ue.msg, "oom_graph_capture") {
		t.Errorf("--verdict nonsense: %v", err)
	}
}
