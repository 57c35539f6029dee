package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/report"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
)

// TestCommandHelp: every command's -h/--help lists each of its flags on
// stdout and succeeds, and the root help documents the exit statuses.
func TestCommandHelp(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"explain":    {"--format", "-o,", "--rules", "--failed", "--unit", "--verdict", "--since", "--until", "--exit-status", "--color"},
		"replay":     {"--db", "--rules", "--loki-url", "--loki-max-age", "--notes"},
		"serve":      {"--db", "--listen", "--journal-dir", "--journal-reader", "--no-journal", "--since", "--units", "--allowed-hosts", "--max-connections", "--push-token"},
		"ladder":     {"--db", "--target", "--host", "-o,", "--format", "--gap", "--granularity"},
		"rules test": {"--help"},
		"rules lint": {"--help"},
		"completion": {"--help"},
		"version":    {"--help"},
	} {
		t.Run(cmd, func(t *testing.T) {
			c, _, err := newRootCmd().Find(strings.Fields(cmd))
			if err != nil {
				t.Fatal(err)
			}
			// Every flag the command has, not only the ones named above
			// (hidden ones, the profiling flags, excepted).
			c.InitDefaultHelpFlag()
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					flags = append(flags, "--"+f.Name)
				}
			})
			for _, h := range []string{"-h", "--help"} {
				out := runCmd(t, append(strings.Fields(cmd), h)...)
				if !strings.Contains(out, "Usage:\n  analyzer "+cmd) {
					t.Errorf("%s %s: no usage line:\n%s", cmd, h, out)
				}
				for _, f := range flags {
					if !strings.Contains(out, " "+f+" ") && !strings.Contains(out, " "+f+"\n") {
						t.Errorf("%s %s does not list %s", cmd, h, f)
					}
				}
			}
		})
	}
	root := runCmd(t, "--help")
	for _, want := range []string{"Exit status:", "0  success", "1  an error, or a failure found", "2  usage error", "explain", "completion"} {
		if !strings.Contains(root, want) {
			t.Errorf("analyzer --help lacks %q", want)
		}
	}
}

// TestFlagsAfterFiles: flags may follow the files, -o is --format, the
// single-dash long flags of earlier versions still work, and "--" ends the
// flags.
func TestFlagsAfterFiles(t *testing.T) {
	const day = "../../examples/dankclaw-day.journal.json"
	before := runCmd(t, "explain", "--format", "json", day)
	if !strings.HasPrefix(before, "{\n \"attempts\": [") {
		t.Fatalf("explain --format json: %.80q", before)
	}
	for _, args := range [][]string{{"explain", day, "--format", "json"}, {"explain", day, "-o", "json"}, {"explain", "-o=json", day},
		{"explain", day, "-format", "json"}, {"explain", "-format=json", day}, {"explain", day, "--since", "-1000000h", "-o", "json"}} {
		if got := runCmd(t, args...); got != before {
			t.Errorf("%v: output differs from explain --format json FILE", args)
		}
	}
	if err := run(t.Context(), []string{"explain", "--", "-o"}); err == nil || !strings.Contains(err.Error(), "-o") {
		t.Errorf(`explain -- -o: %v, want the file "-o" not found`, err)
	}
	// replay FILE --db X writes X, not the default database.
	abs, err := filepath.Abs(day)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	db := filepath.Join(dir, "x.db")
	runCmd(t, "replay", abs, "--db", db)
	if _, err := os.Stat(db); err != nil {
		t.Errorf("replay FILE --db x.db: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, defaultDB)); err == nil {
		t.Errorf("replay FILE --db x.db also created %s", defaultDB)
	}
}

// TestExitStatus: usage errors exit 2 (a FILE that is missing or a
// directory too, as grep's), other errors 1, and explain
// --exit-status exits 1 when a shown attempt failed, 0 when none did.
func TestExitStatus(t *testing.T) {
	old := stdout
	day := "../../examples/dankclaw-day.journal.json"
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"explian", day}, 2},
		{[]string{"explain"}, 2},
		{[]string{"explain", day, "--bogus"}, 2},
		{[]string{"explain", day, "-o", "yaml"}, 2},
		{[]string{"explain", day, "--since", "soon"}, 2},
		{[]string{"ladder", "--gap", "long", day}, 2},
		{[]string{"serve", "extra"}, 2},
		{[]string{"rules", "frobnicate"}, 2},
		{[]string{"rules", "test", "a", "b"}, 2},
		{[]string{"explain", "no-such-file.json"}, 2},
		{[]string{"replay", "--db", filepath.Join(t.TempDir(), "x.db"), "no-such-file.json"}, 2},
		{[]string{"explain", t.TempDir()}, 2},
		{[]string{"explain", "--exit-status", day}, 1},
		{[]string{"explain", "--exit-status", "--verdict", "ready", day}, 0},
		{[]string{"explain", day}, 0},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout = io.Discard
			var msg bytes.Buffer
			got := exitStatus(run(t.Context(), tc.args), &msg)
			stdout = old
			if got != tc.want {
				t.Errorf("analyzer %v: exit status %d, want %d (%s)", tc.args, got, tc.want, msg.String())
			}
			if got == 2 && !strings.Contains(msg.String(), "--help' for usage") {
				t.Errorf("analyzer %v: usage error without a pointer to the help: %q", tc.args, msg.String())
			}
		})
	}
	var ff errFailureFound
	stdout = io.Discard
	defer func() { stdout = old }()
	if err := run(t.Context(), []string{"explain", "--exit-status", "-o", "json", day}); !errors.As(err, &ff) || ff.failed != 2 || ff.total != 4 {
		t.Errorf("explain --exit-status on the day fixture: %v, want 2 of 4 attempts failed", err)
	}
}

// TestVersion: --version and the version command print the version make
// build stamps, and Go's.
func TestVersion(t *testing.T) {
	old := buildVersion
	buildVersion = "v1.2.3-4-gabcdef"
	defer func() { buildVersion = old }()
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out := runCmd(t, args...)
		if !strings.HasPrefix(out, "analyzer v1.2.3-4-gabcdef go1.") || strings.Count(out, "\n") != 1 {
			t.Errorf("%v: %q", args, out)
		}
	}
}

// TestSinceForms: --since and --until take journalctl's and kubectl's forms
// on the command line.
func TestSinceForms(t *testing.T) {
	day := "../../examples/dankclaw-day.journal.json"
	all := runCmd(t, "explain", day)
	for _, since := range []string{"yesterday", "-1h", "2026-01-01", "today", "1h30m"} {
		t.Run(since, func(t *testing.T) {
			// The fixture is of 2026-10-01: after 2026-01-01 all, after the others none.
			out := runCmd(t, "explain", day, "--since", since)
			if since == "2026-01-01" && out != all {
				t.Errorf("--since %s dropped attempts", since)
			}
			if since != "2026-01-01" && !strings.HasSuffix(out, "\n0 attempts\n") {
				t.Errorf("--since %s kept attempts of 2026-10-01:\n%s", since, out)
			}
		})
	}
	if got := runCmd(t, "explain", day, "--until", "2026-01-01"); !strings.HasSuffix(got, "\n0 attempts\n") {
		t.Errorf("--until 2026-01-01 kept attempts: %q", got)
	}
}

// TestCompletion: the completion scripts load the analyzer's own
// completions, which offer its commands and flag values.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			out := runCmd(t, "completion", sh)
			if len(out) < 1000 || !strings.Contains(out, "analyzer") || !strings.Contains(out, "__complete") {
				t.Errorf("completion %s: %d bytes, not a completion script for analyzer", sh, len(out))
			}
		})
	}
	out := runCmd(t, "__complete", "")
	for _, cmd := range []string{"explain", "replay", "serve", "ladder", "rules", "completion"} {
		if !strings.Contains(out, "\n"+cmd+"\t") && !strings.HasPrefix(out, cmd+"\t") {
			t.Errorf("completion of the command does not offer %s:\n%s", cmd, out)
		}
	}
	if out := runCmd(t, "__complete", "explain", "--format", ""); !strings.HasPrefix(out, "text\njson\n") {
		t.Errorf("completion of explain --format: %q", out)
	}
}

// TestNoEffectWarnings: a flag that changes nothing says so on stderr, and
// only then.
func TestNoEffectWarnings(t *testing.T) {
	warnings := func(args ...string) string {
		t.Helper()
		var errOut bytes.Buffer
		oldOut, oldErr := stdout, stderr
		stdout, stderr = io.Discard, &errOut
		defer func() { stdout, stderr = oldOut, oldErr }()
		ctx, cancel := context.WithCancel(t.Context())
		if args[0] == "serve" {
			cancel() // serve stops as soon as it started
		}
		defer cancel()
		if err := run(ctx, args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var ws []string
		for _, l := range strings.Split(errOut.String(), "\n") {
			if strings.Contains(l, "has no effect") {
				ws = append(ws, l)
			}
		}
		return strings.Join(ws, "\n")
	}
	day := "../../examples/dankclaw-day.journal.json"
	dbPath := filepath.Join(t.TempDir(), "w.db")
	serve := []string{"serve", "--db", dbPath, "--listen", "127.0.0.1:0"}
	for _, tc := range []struct {
		args []string
		want []string // flags warned about, in order
	}{
		{append(serve, "--no-journal", "--since", "yesterday", "--journal-dir", "/nonexistent", "--units", "vllm*", "--no-notes"),
			[]string{"--journal-dir", "--since", "--units", "--no-notes"}},
		{append(serve, "--no-journal"), nil},
		{append(serve, "--no-journal", "--push=false", "--push-max-bytes", "10", "--push-token", "t"), []string{"--push-max-bytes"}},
		{append(serve, "--no-journal", "--loki-max-age", "1h", "--loki-structured-metadata"), []string{"--loki-structured-metadata", "--loki-max-age"}},
		{[]string{"replay", "--db", dbPath, "--loki-max-age", "1h", day}, []string{"--loki-max-age"}},
		{[]string{"ladder", day, "--db", dbPath}, []string{"--db"}},
		{[]string{"ladder", "--db", dbPath, "--rules", "../../rules"}, []string{"--rules"}},
		{[]string{"ladder", "--db", dbPath}, nil},
		{[]string{"explain", day, "-o", "json", "--color", "always"}, []string{"--color"}},
		{[]string{"explain", day, "--color", "always"}, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			got := warnings(tc.args...)
			var flags []string
			for _, l := range strings.Split(got, "\n") {
				// slog's text: level=WARN msg="--since has no effect" why=...
				if _, rest, ok := strings.Cut(l, `level=WARN msg="`); ok {
					if f, _, ok := strings.Cut(rest, " has no effect"); ok {
						flags = append(flags, f)
					}
				}
			}
			if strings.Join(flags, " ") != strings.Join(tc.want, " ") {
				t.Errorf("%v: warned about %v, want %v:\n%s", tc.args[1:], flags, tc.want, got)
			}
		})
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
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			if got := last(runCmd(t, append(append([]string{"explain"}, files...), flags...)...)); got != want {
				t.Errorf("explain %v: %q, want %q", flags, got, want)
			}
		})
	}
	err := run(t.Context(), append([]string{"explain", "--verdict", "nonsense"}, files...))
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(ue.msg, "oom_graph_capture") {
		t.Errorf("--verdict nonsense: %v", err)
	}
}

// TestOutputStyle: colour on a terminal unless NO_COLOR is set, --color
// always and never decide regardless, and only a terminal limits the width.
func TestOutputStyle(t *testing.T) {
	for _, tc := range []struct {
		color   string
		tty     bool
		noColor string
		want    report.Style
	}{
		{"auto", true, "", report.Style{Width: 120, Color: true}},
		{"auto", true, "1", report.Style{Width: 120}},
		{"auto", false, "", report.Style{}},
		{"always", false, "1", report.Style{Color: true}},
		{"always", true, "", report.Style{Width: 120, Color: true}},
		{"never", true, "", report.Style{Width: 120}},
	} {
		t.Run(fmt.Sprintf("color=%s,tty=%v,NO_COLOR=%s", tc.color, tc.tty, tc.noColor), func(t *testing.T) {
			got, err := styleFor(tc.color, tc.tty, 120, tc.noColor)
			if err != nil || got != tc.want {
				t.Errorf("--color %s, terminal %v, NO_COLOR=%q: %+v %v, want %+v", tc.color, tc.tty, tc.noColor, got, err, tc.want)
			}
		})
	}
	if _, err := styleFor("yes", true, 80, ""); err == nil {
		t.Error("--color yes accepted")
	}
	day := "../../examples/dankclaw-day.journal.json"
	t.Setenv("NO_COLOR", "1")
	if out := runCmd(t, "explain", day, "--color", "always"); !strings.Contains(out, "\x1b[31moom_graph_capture\x1b[0m") {
		t.Errorf("--color always does not colour the failed verdicts:\n%s", out)
	}
	if out := runCmd(t, "explain", day); strings.Contains(out, "\x1b[") {
		t.Errorf("colour without a terminal:\n%s", out)
	}
}

// TestExplainIDsResolve: the attempt ids explain prints are the ones the
// UI (/attempts/ID) and the API (/api/v1/attempts/ID) answer for after a
// replay of the same files, and times carry their host's offset.
func TestExplainIDsResolve(t *testing.T) {
	out := runCmd(t, append([]string{"explain"}, fixtures...)...)
	ids := regexp.MustCompile(`(?m)^  attempt ([0-9a-f]+) \(analyzer serve: /attempts/([0-9a-f]+)\)$`).FindAllStringSubmatch(out, -1)
	// A crash loop is one paragraph naming its attempts.
	for _, m := range regexp.MustCompile(`(?m)^  attempts ([0-9a-f ]+?)(?: \(analyzer serve: /attempts/ID\))?$`).FindAllStringSubmatch(out, -1) {
		for _, id := range strings.Fields(m[1]) {
			ids = append(ids, []string{"", id, id})
		}
	}
	if len(ids) != 12 { // one per failed attempt
		t.Fatalf("explain printed %d attempt ids, want 12:\n%s", len(ids), out)
	}
	for _, want := range []string{"2026-10-01 09:12:00 -07:00", "2026-10-01 21:40:00 -07:00"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks the start %q with its offset", want)
		}
	}
	dbPath := filepath.Join(t.TempDir(), "ids.db")
	runCmd(t, append([]string{"replay", "--db", dbPath}, fixtures...)...)
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(web.New(db, web.Options{}))
	defer srv.Close()
	for _, m := range ids {
		if m[1] != m[2] {
			t.Errorf("attempt %s points at /attempts/%s", m[1], m[2])
		}
		for _, path := range []string{"/attempts/" + m[1], "/api/v1/attempts/" + m[1]} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s: %d", path, resp.StatusCode)
			}
		}
	}
}

// TestLogFlags: one logger for every command, its level and format from
// --log-level and --log-format; a bad value is a usage error.
func TestLogFlags(t *testing.T) {
	capture := func(args ...string) (string, error) {
		t.Helper()
		var errOut bytes.Buffer
		oldOut, oldErr := stdout, stderr
		stdout, stderr = io.Discard, &errOut
		defer func() { stdout, stderr = oldOut, oldErr }()
		err := run(t.Context(), args)
		return errOut.String(), err
	}
	db := filepath.Join(t.TempDir(), "l.db")
	day := "../../examples/dankclaw-day.journal.json"
	out, err := capture("ladder", day, "--db", db, "--log-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rec); err != nil || rec["level"] != "WARN" || rec["msg"] != "--db has no effect" {
		t.Errorf("json log %q: %v %v", out, rec, err)
	}
	if out, _ := capture("ladder", day, "--db", db, "--log-level", "error"); out != "" {
		t.Errorf("--log-level error still shows %q", out)
	}
	for _, bad := range [][]string{{"--log-level", "loud"}, {"--log-format", "xml"}} {
		_, err := capture(append([]string{"ladder", day}, bad...)...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(ue.msg, bad[0]) {
			t.Errorf("%v: %v, want a usage error naming %s", bad, err, bad[0])
		}
	}
}

// TestExplainWidth: with $COLUMNS set, no line of explain's text output is
// wider, and at 80 columns and more every row keeps its unit, shape and
// verdict whole; piped without $COLUMNS nothing is cut.
func TestExplainWidth(t *testing.T) {
	day := "../../examples/dankclaw-day.journal.json"
	t.Setenv("COLUMNS", "")
	full := runCmd(t, "explain", day)
	if !strings.Contains(full, "dankclaw  frank-small.service  sglang   2 × 262144 fp8_e4m3 687388 KV tokens  graph_capture  oom_graph_capture") {
		t.Fatalf("unlimited output changed; the test below needs a row of the example:\n%s", full)
	}
	for _, cols := range []int{60, 80, 100, 120, 200} {
		t.Run(strconv.Itoa(cols), func(t *testing.T) {
			t.Setenv("COLUMNS", strconv.Itoa(cols))
			out := runCmd(t, "explain", day)
			for _, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > cols {
					t.Errorf("line of %d columns at COLUMNS=%d: %q", n, cols, line)
				}
			}
			if !strings.Contains(out, "attempt 86d14e9dbda76327") || !strings.Contains(out, "/attempts/86d14e9dbda76327)") {
				t.Errorf("attempt id not whole at %d columns", cols)
			}
			if cols < 80 {
				return
			}
			want := "09:12:00  frank-small.service  "
			if cols >= 200 {
				want = "2026-10-01 09:12:00 -07:00  dankclaw  frank-small.service  sglang   2 × 262144 fp8_e4m3 687388 KV tokens  graph_capture  oom_graph_capture"
			} else if !strings.Contains(out, "all rows: host dankclaw, started 2026-10-01, times UTC-07:00\n") {
				t.Errorf("what every row shares is not said above the table at %d columns:\n%s", cols, out)
			}
			for _, w := range []string{want, "2 × 262144 fp8_e4m3", "oom_graph_capture\n", "frank-large.service"} {
				if !strings.Contains(out, w) {
					t.Errorf("%q missing at %d columns:\n%s", w, cols, out)
				}
			}
		})
	}
}
