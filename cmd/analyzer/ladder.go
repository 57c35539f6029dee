package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ladder"
	"github.com/llmfleet/analyzer/report"
	"github.com/llmfleet/analyzer/store"
)

// ladderOpts are ladder's flags.
type ladderOpts struct {
	db, target, host, format, rules, granularity, color string
	gap                                                 time.Duration
}

func newLadderCmd() *cobra.Command {
	o := &ladderOpts{}
	c := &cobra.Command{
		Use:   "ladder [flags] [FILE...]",
		Short: "boot ladders: the rungs tried per target, the boundaries found, the next rung",
		Long: `ladder prints the boot ladders of the database, or of FILEs analyzed
directly: one line per rung with what changed, the boundaries between
passing and failing rungs, and the next rung to try, in the engine's own
flags.`,
		ValidArgsFunction: completeFiles,
		RunE: func(c *cobra.Command, args []string) error {
			return runLadder(c.Context(), o, c.Flags(), args, stdout)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.db, "db", defaultDB, "SQLite database file (when no FILE is given)")
	fs.StringVar(&o.target, "target", "", "only the ladders of this target (served_model_name or unit family)")
	fs.StringVar(&o.host, "host", "", "only the ladders of this host")
	fs.StringVarP(&o.format, "format", "o", "table", "output format: table or json")
	fs.StringVar(&o.rules, "rules", "", "rule directory for FILEs (default: the built-in rules)")
	fs.DurationVar(&o.gap, "gap", ladder.DefaultGap, "time without attempts that starts a new ladder")
	fs.StringVar(&o.granularity, "granularity", "", "block granularity in tokens: N for every engine, or ENGINE=N,... (default 4096)")
	fs.StringVar(&o.color, "color", "auto", "colour the verdicts: auto (on a terminal, unless $NO_COLOR is set), always or never")
	completeValues(c, "format", "table", "json")
	completeValues(c, "color", colorModes...)
	return c
}

// runLadder is `analyzer ladder`: the boot ladders of the database, or of
// FILEs analyzed directly, as a runbook table or JSON; fs tells which
// flags were given.
func runLadder(ctx context.Context, o *ladderOpts, fs *pflag.FlagSet, files []string, w io.Writer) error {
	opt := ladder.Options{Gap: o.gap}
	if err := parseGranularity(o.granularity, &opt); err != nil {
		return usageError{msg: err.Error()}
	}
	if o.format != "table" && o.format != "json" {
		return usageError{msg: fmt.Sprintf("--format %q: want table or json", o.format)}
	}
	style, err := outputStyle(o.color)
	if err != nil {
		return err
	}
	if o.format == "json" {
		noEffect(fs, "-o json is never coloured", "color")
	}
	if len(files) > 0 {
		noEffect(fs, "FILEs are analyzed instead of a database", "db")
	} else {
		noEffect(fs, "the attempts come from the database, already judged (give FILEs to judge them with other rules)", "rules")
	}
	var attempts []*domain.Attempt
	if len(files) > 0 {
		var err error
		if attempts, err = analyzeFiles(ctx, "ladder", loadRules(o.rules), files, nil); err != nil {
			return err
		}
	} else {
		if _, err := os.Stat(o.db); err != nil {
			return fmt.Errorf("database %s: %w (record attempts with `analyzer replay`, or give FILEs)", o.db, err)
		}
		announceDB(fs, o.db)
		db, err := store.Open(o.db)
		if err != nil {
			return err
		}
		defer db.Close()
		if attempts, err = db.ListAttempts(ctx, domain.AttemptFilter{Brief: true}); err != nil {
			return err
		}
	}
	var out []ladder.Ladder
	all := ladder.Build(attempts, opt)
	for _, l := range all {
		if (o.target == "" || l.Target == o.target) && (o.host == "" || l.Host == o.host) {
			out = append(out, l)
		}
	}
	if len(out) == 0 && (o.target != "" || o.host != "") {
		return noLadderError(o.target, o.host, all)
	}
	// Oldest first reads like a night's runbook.
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	if o.format == "json" {
		if out == nil {
			out = []ladder.Ladder{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(struct {
			Ladders []ladder.Ladder `json:"ladders"`
		}{out})
	}
	if len(out) == 0 {
		fmt.Fprintln(w, "no ladders")
		return nil
	}
	for i := range out {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := ladderTable(w, &out[i], style); err != nil {
			return err
		}
	}
	return nil
}

// shellFold breaks a line of flags ("--flag value ...") before a flag
// when it is wider than width, continuation lines ending in " \\" and
// indented, as one pastes a command; width 0 leaves it whole.
func shellFold(line string, width int) string {
	if width <= 0 || utf8.RuneCountInString(line) <= width {
		return line
	}
	var out []string
	cur := ""
	for _, f := range strings.SplitAfter(line, " --") {
		f = strings.TrimSuffix(f, " --")
		if cur != "" && !strings.HasPrefix(f, "  ") {
			f = "--" + f
		}
		if cur != "" && utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(f)+2 > width {
			out = append(out, cur+" \\")
			cur = "    " + f
			continue
		}
		if cur == "" {
			cur = f
		} else {
			cur += " " + f
		}
	}
	return strings.Join(append(out, cur), "\n")
}

// noLadderError is the error of ladder and fit when --target (or --host)
// names no ladder among all: exit status 1, as for any error, naming the
// targets there are (on --host when given).
func noLadderError(target, host string, all []ladder.Ladder) error {
	what := "no ladder"
	if target != "" {
		what += fmt.Sprintf(" of target %q", target)
	}
	if host != "" {
		what += fmt.Sprintf(" on host %q", host)
	}
	known := map[string]bool{}
	for _, l := range all {
		if host == "" || l.Host == host {
			known[l.Target] = true
		}
	}
	if len(known) == 0 {
		if host != "" {
			return fmt.Errorf("%s: no ladders on that host", what)
		}
		return fmt.Errorf("%s: no ladders at all", what)
	}
	names := make([]string, 0, len(known))
	for t := range known {
		names = append(names, strconv.Quote(t))
	}
	sort.Strings(names)
	return fmt.Errorf("%s; known targets: %s", what, strings.Join(names, ", "))
}

// parseGranularity reads --granularity: "8192" for every engine, or
// "vllm=4096,llamacpp=256".
func parseGranularity(s string, opt *ladder.Options) error {
	if s == "" {
		return nil
	}
	for _, part := range strings.Split(s, ",") {
		engine, num, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found {
			num, engine = engine, ""
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("--granularity %q: want a positive number of tokens, or ENGINE=N,...", s) //nolint:staticcheck // ST1005: "..." is the flag's syntax, not a sentence's end
		}
		if engine == "" {
			opt.DefaultGranularity = n
			continue
		}
		if opt.Granularity == nil {
			opt.Granularity = map[string]int64{}
		}
		opt.Granularity[strings.TrimSpace(engine)] = n
	}
	return nil
}

// ladderTable writes one ladder as operators write theirs: one line per
// rung with what changed, then the boundaries, the next rung (also as the
// engine's own flags) and notes; the table is fitted to st.
func ladderTable(w io.Writer, l *ladder.Ladder, st report.Style) error {
	span := ""
	if !l.StartedAt.IsZero() {
		span = ", " + l.StartedAt.Format("2006-01-02 15:04 -07:00") + " → " + l.EndedAt.Format("15:04")
	}
	fmt.Fprintln(w, st.Fold(fmt.Sprintf("ladder %s on %s (%s, %d rungs%s)  id %s", report.Safe(l.Target), report.Safe(or(l.Host, "pasted text")),
		report.Safe(or(l.Engine, "unknown")), len(l.Rungs), span, l.ID), "  "))
	header := []string{"RUNG", "STARTED", "SHAPE", "CHANGE", "VERDICT", "PHASE", "KV TOKENS", "CONC", "OUTCOME"}
	var rows [][]string
	for _, r := range l.Rungs {
		started := "-"
		if !r.StartedAt.IsZero() {
			started = r.StartedAt.Format("15:04:05")
		}
		change := "-"
		if r.N == 1 {
			change = "(first)"
		} else if len(r.Diff) > 0 {
			var cs []string
			for _, c := range r.Diff {
				cs = append(cs, c.String())
			}
			change = strings.Join(cs, ", ")
		}
		kv, conc := "-", "-"
		if r.KVTokens != nil {
			kv = fmt.Sprint(*r.KVTokens)
		}
		if r.Concurrency != nil {
			conc = fmt.Sprintf("%gx", *r.Concurrency)
		}
		rows = append(rows, []string{strconv.Itoa(r.N), started, or(sizing(r.Shape), "-"), change, string(r.Verdict), string(r.Phase), kv, conc, r.Outcome()})
	}
	// The change folds and phase and outcome are cut before the shape,
	// which identifies the rung; its start, verdict and numbers stay
	// whole. Too narrow for that, phase, outcome, concurrency and the
	// start go (the boundaries and notes below say what they said).
	if err := st.Columns(w, header, rows, report.Layout{Verdict: 4, Wrap: []int{3}, Shrink: []int{5, 8}, Keep: []int{2},
		Drop: []int{5, 8, 7, 1}}); err != nil {
		return err
	}
	// The sentences fold at the terminal's width (not in a pipe).
	if len(l.Boundaries) > 0 {
		fmt.Fprintln(w, "boundaries:")
		for _, b := range l.Boundaries {
			fmt.Fprintf(w, "  %s\n", st.Fold(report.Safe(b.Note), "    "))
		}
	}
	switch n := l.Next; {
	case n == nil:
	case n.Found:
		fmt.Fprintln(w, st.Fold("boundary found: "+n.Text, "  "))
	case n.Shape != "":
		fmt.Fprintln(w, st.Fold("next rung: "+n.Text, "  "))
		if n.Flags != "" {
			// Whole, to be copied onto the engine's command line: on a
			// narrow terminal broken between flags with the shell's "\".
			fmt.Fprintln(w, shellFold(fmt.Sprintf("  %s flags: %s", l.Engine, n.Flags), st.Width))
		}
	default:
		fmt.Fprintln(w, st.Fold("next rung: none yet, "+n.Text, "  "))
	}
	for _, n := range l.Notes {
		fmt.Fprintln(w, st.Fold("note: "+n, "  "))
	}
	return nil
}

// sizing is the rung's sizing without the outcome: "3 × 262144 bf16".
func sizing(s domain.Shape) string {
	t := domain.Shape{}
	for _, k := range []string{domain.ShapeMaxNumSeqs, domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype, domain.ShapeKVCacheMemoryBytes} {
		if v, ok := s[k]; ok {
			t[k] = v
		}
	}
	return t.Summary()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
