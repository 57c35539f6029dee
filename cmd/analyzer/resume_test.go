package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

// storedAttempts returns the attempts of a database as the explain
// contract shows them plus the line count, by id.
func storedAttempts(t *testing.T, dbPath string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range listStored(t, dbPath) {
		j := a.JSON()
		b, err := json.Marshal(struct {
			domain.AttemptJSON
			Lines         int
			StopRequested bool
		}{j, a.Lines, a.StopRequested})
		if err != nil {
			t.Fatal(err)
		}
		out[a.ID] = string(b)
	}
	return out
}

// TestReplayInTwoParts replays each fixture cut in two at many points, one
// part after the other into one database, as an operator replays daily
// exports, then the second part again from 40 lines before the cut (an
// overlapping export): every attempt must come out as from one replay of
// the whole file, including the one the cut goes through (before Resume it
// was stored from the second part alone, its engine and shape unknown).
func TestReplayInTwoParts(t *testing.T) {
	for _, f := range fixtures {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte("\n"))
		dir := t.TempDir()
		whole := filepath.Join(dir, "whole.db")
		runCmd(t, "replay", "--db", whole, f)
		want := storedAttempts(t, whole)
		for cut := len(lines) / 16; cut < len(lines)-1; cut += len(lines) / 16 {
			a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
			if err := os.WriteFile(a, bytes.Join(lines[:cut], nil), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(b, bytes.Join(lines[cut:], nil), 0o644); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dir, "split.db")
			for _, p := range []string{db, db + "-wal", db + "-shm"} {
				os.Remove(p)
			}
			runCmd(t, "replay", "--db", db, a)
			runCmd(t, "replay", "--db", db, b)
			// An export overlapping the one before by 40 lines changes nothing.
			if err := os.WriteFile(b, bytes.Join(lines[max(cut-40, 0):], nil), 0o644); err != nil {
				t.Fatal(err)
			}
			runCmd(t, "replay", "--db", db, b)
			got := storedAttempts(t, db)
			if len(got) != len(want) {
				t.Errorf("%s cut at line %d: %d attempts, want %d", filepath.Base(f), cut, len(got), len(want))
			}
			for id, w := range want {
				if got[id] != w {
					t.Errorf("%s cut at line %d: attempt %s differs: %s", filepath.Base(f), cut, id, jsonDiff(got[id], w))
				}
			}
		}
	}
}

// jsonDiff names the top-level keys whose values differ, with both values
// cut to 160 bytes.
func jsonDiff(got, want string) string {
	var g, w map[string]json.RawMessage
	_ = json.Unmarshal([]byte(got), &g)
	_ = json.Unmarshal([]byte(want), &w)
	cut := func(b json.RawMessage) string {
		if len(b) > 160 {
			return string(b[:160]) + "…"
		}
		return string(b)
	}
	var out []string
	for k, wv := range w {
		if gv := g[k]; string(gv) != string(wv) {
			out = append(out, fmt.Sprintf("%s: got %s, want %s", k, cut(gv), cut(wv)))
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			out = append(out, fmt.Sprintf("%s: got %s, want none", k, cut(gv)))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
