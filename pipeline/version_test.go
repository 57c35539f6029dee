package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/tracker"
)

// recordingStore is a Store that keeps the ids of the attempts each
// SaveAttempts call saved.
type recordingStore struct {
	mu    sync.Mutex
	saves [][]string
}

func (s *recordingStore) SaveAttempts(_ context.Context, as []*domain.Attempt, _ *domain.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(as))
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	slices.Sort(ids)
	s.saves = append(s.saves, ids)
	return nil
}

func (s *recordingStore) GetAttempt(context.Context, string) (*domain.Attempt, error) {
	return nil, domain.ErrNotFound
}

// take returns the ids saved since the last take (nil when no save ran).
func (s *recordingStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ids := range s.saves {
		out = append(out, ids...)
	}
	s.saves = nil
	slices.Sort(out)
	return out
}

// storedHash fingerprints everything SaveAttempts stores of an attempt
// (what the pipeline hashed before it had versions, plus the stop request
// and the kept log).
func storedHash(t *testing.T, a *domain.Attempt) uint64 {
	t.Helper()
	h := fnv.New64a()
	enc := json.NewEncoder(h)
	var log [3]int
	if a.Log != nil {
		log = [3]int{a.Log.Total, len(a.Log.Lines), -1}
		if n := len(a.Log.Lines); n > 0 {
			log[2] = a.Log.Lines[n-1].Seq
		}
	}
	if err := enc.Encode(a.JSON()); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(struct {
		Findings      []domain.Finding
		Timeline      []domain.PhaseMark
		Context       []domain.Evidence
		Lines         int
		ExitCode      string
		ContainerID   string
		Restart       *int
		StopRequested bool
		Log           [3]int
	}{a.Findings, a.Timeline, a.Context, a.Lines, a.ExitCode, a.ContainerID, a.RestartCounter, a.StopRequested, log}); err != nil {
		t.Fatal(err)
	}
	return h.Sum64()
}

// TestFlushSavesExactlyChangedAttempts feeds both fixture hosts through
// Live in batches with a flush after each, and beside it through a tracker
// whose attempts are fingerprinted in full: every flush must save exactly
// the attempts whose stored form changed since they were last saved — no
// change missed, and no unchanged attempt saved again (as many saves as
// the hash comparison made before versions).
//
// With a flush after every entry it saves 850 attempts where the hash of
// before saved 843: that hash left out the stop request, so a "Stopping"
// record alone did not save it (stop_requested stayed stale).
func TestFlushSavesExactlyChangedAttempts(t *testing.T) {
	es := entries(t, fixtures...)
	for _, batch := range []int{1, 11} {
		t.Run(fmt.Sprint("batch", batch), func(t *testing.T) { flushSavesExactlyChanged(t, es, batch) })
	}
}

func flushSavesExactlyChanged(t *testing.T, es []domain.Entry, batch int) {
	db := &recordingStore{}
	l := pipeline.New(db, ruleSet(t), pipeline.Options{FlushInterval: time.Hour, PruneAfter: -1})
	l.Start()
	defer l.Close()
	set := ruleSet(t)
	oracle := tracker.New(set, tracker.Options{KeepLog: true})
	last := map[string]uint64{}
	flushes, saved, skipped := 0, 0, 0
	for i := 0; i < len(es); i += batch {
		part := es[i:min(i+batch, len(es))]
		if err := l.Add(part); err != nil {
			t.Fatal(err)
		}
		flush(t, l)
		flushes++
		for _, e := range part {
			oracle.Add(e)
		}
		var want []string
		// The same rule set again: every attempt is judged afresh, not
		// taken from the oracle's own judgements by version.
		oracle.SetRules(set)
		as := oracle.Attempts()
		for _, a := range as {
			if h := storedHash(t, a); last[a.ID] != h {
				last[a.ID] = h
				want = append(want, a.ID)
			}
		}
		slices.Sort(want)
		got := db.take()
		if !slices.Equal(got, want) {
			t.Fatalf("flush %d (entries %d-%d) saved %v, want the changed attempts %v", flushes, i, i+len(part), got, want)
		}
		saved += len(got)
		skipped += len(as) - len(got)
	}
	// The fixtures hold 20+ attempts over 80+ flushes: most attempts
	// stand unchanged through most flushes.
	if flushes < 80 || saved == 0 || skipped <= saved {
		t.Errorf("%d flushes saved %d attempts and skipped %d unchanged ones; want most skipped", flushes, saved, skipped)
	}
	flush(t, l)
	if got := db.take(); len(got) != 0 {
		t.Errorf("a flush without new entries saved %v", got)
	}
}

// TestUnchangedAttemptNotSavedAgain: two units run side by side; a line of
// one saves only that one, and a unit's stop saves only it.
func TestUnchangedAttemptNotSavedAgain(t *testing.T) {
	db := &recordingStore{}
	l := pipeline.New(db, ruleSet(t), pipeline.Options{FlushInterval: time.Hour, PruneAfter: -1})
	l.Start()
	defer l.Close()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := 0
	line := func(unit, inv, msg string) domain.Entry {
		n++
		return domain.Entry{Cursor: fmt.Sprint("c", n), Time: at.Add(time.Duration(n) * time.Second), Host: "h",
			Unit: unit, InvocationID: inv, PID: 7, Identifier: "vllm", Message: msg, Journal: true,
			Fields: map[string]string{"_TRANSPORT": "stdout"}}
	}
	stop := func(unit, inv string) domain.Entry {
		n++
		return domain.Entry{Cursor: fmt.Sprint("c", n), Time: at.Add(time.Duration(n) * time.Second), Host: "h",
			PID: 1, Identifier: "systemd", Message: "Stopping " + unit + "...", Journal: true,
			Fields: map[string]string{"UNIT": unit, "INVOCATION_ID": inv, "JOB_TYPE": "stop",
				"MESSAGE_ID": "de5b426a63be47a7b6ac3eaac82e2f6f", "_TRANSPORT": "journal"}}
	}
	step := func(want []string, es ...domain.Entry) {
		t.Helper()
		if err := l.Add(es); err != nil {
			t.Fatal(err)
		}
		flush(t, l)
		if got := db.take(); !slices.Equal(got, want) {
			t.Fatalf("saved %v, want %v", got, want)
		}
	}
	banner := "INFO 12-01 10:00:00 [api_server.py:1000] vLLM API server version 0.9.1"
	probe := tracker.New(ruleSet(t), tracker.Options{})
	probe.Add(line("a.service", "inv-a", banner))
	probe.Add(line("b.service", "inv-b", banner))
	as := probe.Attempts()
	if len(as) != 2 || as[0].Engine != "vllm" {
		t.Fatalf("the banner makes no vLLM attempts: %d attempts", len(as))
	}
	idA, idB := as[0].ID, as[1].ID
	both := []string{idA, idB}
	slices.Sort(both)
	step(both, line("a.service", "inv-a", banner), line("b.service", "inv-b", banner))
	step([]string{idB}, line("b.service", "inv-b", "INFO 12-01 10:00:05 [core.py:60] Initializing a V1 LLM engine"))
	step(nil)
	step([]string{idA}, stop("a.service", "inv-a"))
	step([]string{idA}, line("a.service", "inv-a", "INFO 12-01 10:00:09 [launcher.py:80] Shutting down FastAPI HTTP server."))
}
