package main

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/lokitest"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/store"
)

// TestEntryPointsAgree: the night ladder read by `explain`, stored by
// `replay`, and pushed to `serve` as Alloy pushes a host's journal gives
// the same attempts (verdict, phase, findings, shape, end, evidence) — one
// pipeline behind every entry point. serve following the journal is
// compared the same way in TestServeFollowsJournalFiles, --from-loki in
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
