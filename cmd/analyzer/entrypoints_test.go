package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"
	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/ingest/journald"
	"github.com/llmfleet/analyzer/ingest/journald/journaldfake"
	"github.com/llmfleet/analyzer/internal/lokitest"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/rules/ruletest"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/tracker"
)

// TestEntryPointsAgree: the night ladder read by `explain`, stored by
// `replay`, pushed to `serve` as Alloy pushes a host's journal, and
// followed by `serve` from a journal (an in-memory one, through serve's
// startJournal) gives the same attempts (verdict, phase, findings, shape,
// end, evidence); and each of its attempts that one rule decided, written
// as a rule test of that rule (`analyzer rules test`), gives the attempt
// explain gives — one pipeline behind every entry point. serve following
// real journal files is compared the same way in
// TestServeFollowsJournalFiles, --from-loki in
// TestReplayFromLokiGivesTheAttemptsOfReplay.
func TestEntryPointsAgree(t *testing.T) {
	const host = "dankserver"
	want := wantAttempts(t, nightLadder, host)
	if len(want) != 16 {
		t.Fatalf("explain's path finds %d attempts, want 16", len(want))
	}

	t.Run("explain", func(t *testing.T) {
		var doc struct {
			Attempts []domain.AttemptJSON `json:"attempts"`
		}
		if err := json.Unmarshal([]byte(runCmd(t, "explain", "-o", "json", nightLadder)), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Attempts) != len(want) {
			t.Fatalf("explain prints %d attempts, want %d", len(doc.Attempts), len(want))
		}
		for _, g := range doc.Attempts {
			w := want[g.Unit+" "+g.InvocationID]
			if w == nil {
				t.Errorf("unexpected attempt %s %s", g.Unit, g.InvocationID)
				continue
			}
			gf, wf := append([]string(nil), g.Findings...), w.FindingIDs()
			sort.Strings(gf)
			sort.Strings(wf)
			if g.Verdict != w.Verdict || g.Phase != w.Phase || strings.Join(gf, ",") != strings.Join(wf, ",") {
				t.Errorf("%s %s: explain %s/%s %v, pipeline %s/%s %v", g.Unit, g.InvocationID, g.Verdict, g.Phase, gf, w.Verdict, w.Phase, wf)
			}
		}
	})

	t.Run("replay", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "replay.db")
		runCmd(t, "replay", "--db", db, nightLadder)
		compareStored(t, db, want)
	})

	t.Run("serve push", func(t *testing.T) {
		dbPath := filepath.Join(t.TempDir(), "push.db")
		db, err := store.Open(dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		lv, srv := liveServer(t, db, "--push-token", "tok")
		// In batches of 100 entries per stream, as loki.write sends them.
		streams := lokitest.AlloyStreams(t, lokitest.JournalRecords(t, nightLadder))
		for more := true; more; {
			more = false
			req := &push.PushRequest{}
			for i := range streams {
				s := &streams[i]
				n := min(100, len(s.Entries))
				if n == 0 {
					continue
				}
				ps := push.Stream{Labels: labelString(s.Labels)}
				for _, e := range s.Entries[:n] {
					var meta push.LabelsAdapter
					for k, v := range e.Metadata {
						meta = append(meta, push.LabelAdapter{Name: k, Value: v})
					}
					ps.Entries = append(ps.Entries, push.Entry{Timestamp: e.Time, Line: e.Line, StructuredMetadata: meta})
				}
				s.Entries = s.Entries[n:]
				req.Streams = append(req.Streams, ps)
				more = true
			}
			if !more {
				break
			}
			body, err := loki.EncodeProtobuf(req)
			if err != nil {
				t.Fatal(err)
			}
			postPush(t, srv.URL, "tok", body)
		}
		if err := lv.close(); err != nil { // the final flush saves what is open
			t.Fatal(err)
		}
		db.Close()
		compareStored(t, dbPath, want)
	})

	t.Run("serve journal", func(t *testing.T) {
		j := journaldfake.New()
		j.Append(lokitest.JournalRecords(t, nightLadder)...)
		old := openJournal
		openJournal = func() (journald.Journal, error) { return j, nil }
		defer func() { openJournal = old }()
		dbPath := filepath.Join(t.TempDir(), "journal.db")
		db, err := store.Open(dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		jf := addJournalFlags(fs)
		if err := fs.Parse([]string{"--since", "2000-01-01T00:00:00Z", "--no-notes"}); err != nil {
			t.Fatal(err)
		}
		set, err := rules.LoadSource("")
		if err != nil {
			t.Fatal(err)
		}
		f, err := startJournal(context.Background(), db, set, jf, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "16 attempts, 16 ended", func() bool { n, e := countAttempts(dbPath); return n == 16 && e == 16 })
		if err := f.stop(); err != nil {
			t.Fatal(err)
		}
		if !j.Closed() {
			t.Error("the follower did not close the journal it opened")
		}
		db.Close()
		compareStored(t, dbPath, want)
	})

	t.Run("rules test", func(t *testing.T) {
		set, err := rules.LoadSource("")
		if err != nil {
			t.Fatal(err)
		}
		var entries []domain.Entry
		if _, err := ingest.ReadFile(context.Background(), nightLadder, ingest.Options{Fields: tracker.Fields},
			func(e domain.Entry) error { entries = append(entries, e); return nil }); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		decided := 0
		for _, k := range keys {
			w := want[k]
			if len(w.Findings) != 1 {
				continue // a rule test judges with one rule
			}
			decided++
			var r *rules.Rule
			for _, c := range set.Rules() {
				if c.ID == w.Findings[0].Rule {
					r = c
				}
			}
			if r == nil {
				t.Fatalf("%s: no rule %s", k, w.Findings[0].Rule)
			}
			// The attempt's own lines (engine output: not PID 1's records,
			// not podman's events), at their offsets from the first.
			spec := rules.TestSpec{Name: k, Engine: w.Engine}
			var first time.Time
			for _, e := range entries {
				mine := e.InvocationID == w.InvocationID && e.PID != 1 && e.Field("PODMAN_EVENT") == ""
				if !mine && (w.ContainerID == "" || e.Field("CONTAINER_ID_FULL") != w.ContainerID) {
					continue
				}
				if first.IsZero() {
					first = e.Time
				}
				spec.Lines = append(spec.Lines, rules.TestLine{Msg: e.Message, At: e.Time.Sub(first), HasAt: true, Repeat: 1})
			}
			// Judged by the rule under test alone, as `analyzer rules test`
			// does, the attempt is explain's but for the supporting evidence
			// other rules add (the wrappers' lines: "EngineCore failed to
			// start."); judged by every rule, it is explain's whole.
			for _, only := range []*rules.Rule{r, nil} {
				as, err := ruletest.Attempts(context.Background(), set, only, spec)
				if err != nil {
					t.Fatal(err)
				}
				if len(as) != 1 {
					t.Errorf("%s: the rule test gives %d attempts, want 1", k, len(as))
					continue
				}
				all := only == nil
				if got, exp := ruleTestView(as[0], ruletest.Start, all), ruleTestView(w, first, all); got != exp {
					t.Errorf("%s (%d lines), every rule %v:\nrules test %s\n   explain %s", k, len(spec.Lines), all, got, exp)
				}
				if !all && !subsequence(evidenceText(as[0].Evidence), evidenceText(w.Evidence)) {
					t.Errorf("%s: the rule test's evidence is not explain's less other rules' lines:\n%q\n%q", k,
						evidenceText(as[0].Evidence), evidenceText(w.Evidence))
				}
			}
		}
		if decided != 5 {
			t.Errorf("%d attempts decided by one rule, want 5 (2 oom_graph_capture, oom_kv_alloc, 2 dynamo_constraint_violation)", decided)
		}
	})
}

// ruleTestView is what a rule test of an attempt's lines must reproduce of
// the attempt (not its identity and end: a rule test's lines are plain
// text of no unit): engine, verdict, phase, rule, shape, line count, the
// phase marks and the findings with their times as offsets from the
// attempt's first line (at first), note, captures, match and evidence,
// the decisive line's context, and with all the attempt's evidence.
func ruleTestView(a *domain.Attempt, first time.Time, all bool) string {
	type mark struct {
		Phase   domain.Phase
		At      time.Duration
		Message string
	}
	type finding struct {
		ID, Rule, Note, Match string
		Phase                 domain.Phase
		At                    time.Duration
		Captures              map[string]string
		Evidence              []string
	}
	var marks []mark
	for _, m := range a.Timeline {
		if m.Phase != domain.PhaseStart {
			marks = append(marks, mark{m.Phase, m.Time.Sub(first), m.Message})
		}
	}
	evidence := func(evs []domain.Evidence) []string {
		var out []string
		for _, e := range evs {
			out = append(out, e.Time.Sub(first).String()+" "+e.Message)
		}
		return out
	}
	var fs []finding
	for _, f := range a.Findings {
		fs = append(fs, finding{f.ID, f.Rule, f.Note, f.Match, f.Phase, f.Time.Sub(first), f.Captures, evidence(f.Evidence)})
	}
	b, _ := json.Marshal(struct {
		Engine, EngineVersion string
		Verdict               domain.Verdict
		Phase                 domain.Phase
		Rule                  string
		Shape                 domain.Shape
		Lines                 int
		Marks                 []mark
		Findings              []finding
		Evidence, Context     []string
	}{a.Engine, a.EngineVersion, a.Verdict, a.Phase, a.Rule, a.Shape, a.Lines, marks, fs, nil, evidence(a.Context)})
	if all {
		b, _ = json.Marshal(struct {
			View     json.RawMessage
			Evidence []string
		}{b, evidence(a.Evidence)})
	}
	return string(b)
}

func evidenceText(evs []domain.Evidence) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Message)
	}
	return out
}

// subsequence reports whether sub is in seq, in order.
func subsequence(sub, seq []string) bool {
	i := 0
	for _, s := range seq {
		if i < len(sub) && sub[i] == s {
			i++
		}
	}
	return i == len(sub)
}

// labelString writes labels as Loki's push API takes them: {k="v", ...},
// sorted.
func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + jsonQuote(l[k]))
	}
	b.WriteByte('}')
	return b.String()
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
