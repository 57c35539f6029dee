package notes_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/journaldtest"
	"github.com/llmfleet/analyzer/notes"
)

// memLedger is the database's notes table in memory.
type memLedger map[string]bool

func (m memLedger) NoteWritten(a, f string) (bool, error) { return m[notes.Key(a, f)], nil }
func (m memLedger) RecordNote(a, f, _ string) error       { m[notes.Key(a, f)] = true; return nil }

func send(message string, priority int, fields map[string]string) error {
	return journal.Send(message, journal.Priority(priority), fields)
}

// TestNoteLandsInJournal writes a note through the native protocol of a
// real journald and reads it back with journalctl, by MESSAGE_ID and by
// `journalctl -u UNIT` (root's OBJECT_SYSTEMD_UNIT).
func TestNoteLandsInJournal(t *testing.T) {
	journaldtest.Ensure(t)
	unit := fmt.Sprintf("notes-test-%d.service", time.Now().UnixNano())
	a := &domain.Attempt{ID: "att-" + unit, Unit: unit, InvocationID: "38e751def21b9209c886df2ea0f71d0e",
		Verdict: domain.VerdictOOMGraphCapture, Phase: domain.PhaseGraphCapture,
		Shape: domain.Shape{"max_num_seqs": int64(2), "max_model_len": int64(262144)}}
	f := domain.Finding{ID: "oom_graph_capture", Rule: "common.oom_graph_capture", Severity: domain.SeverityCritical,
		MessageID: "398608f98ed1f9f25b2bd53576934742", Phase: domain.PhaseGraphCapture, Note: "Device OOM during graph capture."}
	ledger := memLedger{}
	w := notes.NewWriter(send, ledger, nil)
	if !w.Offer(a, f) {
		t.Fatal("first offer did not write")
	}
	if w.Offer(a, f) {
		t.Fatal("second offer wrote the note again")
	}
	// A new writer (after a restart) with the same ledger writes nothing.
	if notes.NewWriter(send, ledger, nil).Offer(a, f) {
		t.Fatal("a restarted writer wrote the note again")
	}
	// A note already in the journal but not in the ledger (crash between
	// the two) is not written again either.
	fresh := memLedger{}
	if notes.NewWriter(send, fresh, map[string]bool{notes.Key(a.ID, f.ID): true}).Offer(a, f) {
		t.Fatal("a note found in the journal was written again")
	}
	if !fresh[notes.Key(a.ID, f.ID)] {
		t.Fatal("a note found in the journal was not recorded in the ledger")
	}

	// Up to 30 s: a journald this test binary or another one has just
	// started, on a machine busy with the other packages' tests, took
	// more than the 2.5 s this waited before (a fresh-machine make test;
	// the package then took 8-10 s where it takes 0.1 s here); the loop
	// ends as soon as the note shows.
	var got []map[string]any
	for i := 0; i < 600 && len(got) == 0; i++ {
		out, err := exec.Command("journalctl", "-u", unit, "-o", "json", "--no-pager").Output()
		if err != nil {
			t.Fatalf("journalctl: %v", err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err == nil {
				got = append(got, m)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) != 1 {
		t.Fatalf("journalctl -u %s shows %d notes, want 1", unit, len(got))
	}
	n := got[0]
	for k, want := range map[string]string{"MESSAGE_ID": f.MessageID, "PRIORITY": "2", "SYSLOG_IDENTIFIER": "analyzer",
		"OBJECT_SYSTEMD_UNIT": unit, "ANALYZER_ATTEMPT": a.ID, "ANALYZER_VERDICT": "oom_graph_capture",
		"ANALYZER_FINDING": "oom_graph_capture", "ANALYZER_RULE": "common.oom_graph_capture",
		"ANALYZER_INVOCATION_ID": a.InvocationID} {
		if n[k] != want {
			t.Errorf("%s = %v, want %s", k, n[k], want)
		}
	}
	if msg, _ := n["MESSAGE"].(string); !strings.HasPrefix(msg, unit+": oom_graph_capture in phase graph_capture, shape 2 × 262144") ||
		!strings.Contains(msg, "Device OOM during graph capture.") {
		t.Errorf("MESSAGE = %q", n["MESSAGE"])
	}
}
