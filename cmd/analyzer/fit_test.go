package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/internal/fixturetest"
	"github.com/llmfleet/analyzer/internal/race"
	"github.com/llmfleet/analyzer/ladder"
)

// TestFit: the example from the database, as a table and as JSON,
// and the SGLang and halogen targets of the day fixture.
func TestFit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "f.db")
	runCmd(t, "replay", "--db", db, nightFixture, "../../examples/dankclaw-day.journal.json")
	t.Setenv("COLUMNS", "") // piped: rows whole

	out := runCmd(t, "fit", "--db", db, "--target", "frank-primary", "--kv-cache-dtype", "fp8", "--max-num-seqs", "6", "--max-model-len", "241664")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i, want := range []string{
		"fit frank-primary on dankserver (vllm, ladder ",
		"shape     6 × 241664 fp8, KV pool sized to hold the contract",
		"contract  1449984 tokens; pool 1449984 tokens = 10.40 GiB at 7698 B/token",
		"boot      FAILS  fails: its KV pool needs 10.40 GiB (1449984 tokens × 7698 B/token fp8), more than the 9.18 GiB that were free when rung 5 (6 × 241664 fp8) asked 10.70 GiB for its KV cache",
		"survive   FAILS  fails: it does not boot",
		"flags     --max-num-seqs 6 --max-model-len 241664 --kv-cache-dtype fp8",
		// The night's ready rungs all took 5m24.4s; none ran 6 × 241664 fp8,
		// the three nearest (one doubling or less away) did.
		"time      ready in ~5m24s (p90 5m24s), from 3 boots of the nearest shapes",
		"largest   to boot:    1310720 = 5 × 262144  --max-num-seqs 5 --max-model-len 262144 --kv-cache-dtype fp8 --max-num-batched-tokens 1024",
		"          to survive: 1048576 = 4 × 262144  --max-num-seqs 4 --max-model-len 262144 --kv-cache-dtype fp8 --max-num-batched-tokens 1024",
	} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: want prefix %q\n%s", i, want, out)
		}
	}

	// At 80 columns each row's text folds under its own column.
	t.Setenv("COLUMNS", "80")
	narrow := runCmd(t, "fit", "--db", db, "--target", "frank-primary", "--kv-cache-dtype", "fp8", "--max-num-seqs", "6", "--max-model-len", "241664")
	for _, line := range strings.Split(narrow, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("line of %d columns at COLUMNS=80: %q", n, line)
		}
	}
	if !strings.Contains(narrow, "\n          B/token fp8), more than the 9.18 GiB") {
		t.Errorf("the boot row is not folded under its column at 80 columns:\n%s", narrow)
	}
	t.Setenv("COLUMNS", "")

	var doc fitJSON
	out = runCmd(t, "fit", "--db", db, "--target", "frank-primary", "--max-num-seqs", "4", "--max-model-len", "262144",
		"--kv-cache-memory-bytes", "8311013376", "-o", "json")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	p := doc.Prediction
	// The latest rung's dtype (fp8) by default; rung 8 ran this very shape.
	if doc.Host != "dankserver" || p.KVDtype != "fp8" || p.Boot.Outcome != ladder.OutcomeBoots || p.Survive.Outcome != ladder.OutcomeBoots || p.Survive.Rung != 8 {
		t.Errorf("4 × 262144 at 8311013376 bytes: %+v", doc)
	}
	if doc.Largest.Survive == nil || doc.Largest.Survive.ContractTokens != 1048576 {
		t.Errorf("largest at the pinned pool: %+v", doc.Largest)
	}
	// Rung 8 and the two nearest ready rungs: 5m24.4s each.
	if rt := doc.ReadyTime; rt.P50 == nil || rt.P90 == nil || math.Abs(*rt.P50-324.4) > 0.01 || math.Abs(*rt.P90-324.4) > 0.01 || rt.Basis != 3 || rt.SameShape || rt.NoHistory {
		t.Errorf("time to ready of 4 × 262144 fp8: %+v", rt)
	}

	out = runCmd(t, "fit", "--db", db, "--target", "frank-small", "--max-num-seqs", "3", "--max-model-len", "262144")
	if !strings.Contains(out, "\ntime      no history\n") {
		t.Errorf("frank-small has no ready boot, yet:\n%s", out)
	}
	if !strings.Contains(out, "boot      FAILS  fails: rung 1 (2 × 262144 fp8_e4m3) failed with oom_graph_capture") || !strings.Contains(out, "--max-running-requests 3 --context-length 262144 --kv-cache-dtype fp8_e4m3") {
		t.Errorf("frank-small:\n%s", out)
	}
	out = runCmd(t, "fit", "--db", db, "--target", "frank-large", "--host", "dankclaw", "--max-num-seqs", "2", "--max-model-len", "200192")
	if !strings.Contains(out, "boot      BOOTS  boots: rung 2 ran the same shape (2 × 200192)") || !strings.Contains(out, "HALOGEN_KV_SLOTS=2 HALOGEN_CTX=200192") {
		t.Errorf("frank-large:\n%s", out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-num-seqs", "6", "--max-model-len", "241664"}, "--target is required"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6"}, "--max-model-len are required"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "8192", "--kv-cache-memory-bytes", "1GiB", "--gpu-memory-utilization", "0.9"}, "not both"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "8192", "--gpu-memory-utilization", "1.5"}, "(0, 1]"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "8192", "--kv-cache-dtype", "fp9"}, "not one the ladder ran (auto, fp8)"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "8192", "--gpu-memory-utilization", "NaN"}, "(0, 1]"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "2000000000", "--max-model-len", "8192"}, "--max-num-seqs: max_num_seqs: 2000000000 is outside 1..1048576 sequences (beyond any device)"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "268435456"}, "--max-model-len: max_model_len: 268435456 is outside 1..134217728 tokens"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "8192", "--kv-cache-memory-bytes", "1e300"}, `--kv-cache-memory-bytes "1e300": want a positive number of bytes`},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "8192", "--kv-cache-memory-bytes", "99999999999 TiB"}, `--kv-cache-memory-bytes "99999999999 TiB": want a positive number of bytes`},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "8192", "--kv-cache-memory-bytes", "512 TiB"}, "--kv-cache-memory-bytes: kv_cache_memory_bytes: 562949953421312 is outside 0..281474976710656 bytes"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "99999999999999999999", "--max-model-len", "8192"}, "--max-num-seqs"},
		{[]string{"--target", "frank-primary", "--max-num-seqs", "6", "--max-model-len", "8192", "--gpu-memory-utilization", "-Inf"}, "(0, 1]"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			err := run(t.Context(), append([]string{"fit", "--db", db}, c.args...))
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(ue.msg, c.want) {
				t.Errorf("fit %v: %v, want a usage error saying %q", c.args, err, c.want)
			}
		})
	}
	if err := run(t.Context(), []string{"fit", "--db", db, "--target", "nope", "--max-num-seqs", "1", "--max-model-len", "1"}); err == nil || !strings.Contains(err.Error(), `no ladder of target "nope"; known targets: `) {
		t.Errorf("unknown target: %v", err)
	}
}

// TestFitOfALogStatingTwoBillionSequences: the night fixture with rung
// 6's max_num_seqs rewritten to 2000000000 (any local user writes to
// journald) once made fit walk two billion sequence counts, deaf to
// SIGINT and SIGTERM. The rung is left out and named, and fit answers
// what the other rungs say well within a deadline.
func TestFitOfALogStatingTwoBillionSequences(t *testing.T) {
	path := fixturetest.NightStating(t, nightFixture, t.TempDir(), "2000000000")
	ctx, cancel := context.WithTimeout(t.Context(), race.Budget(10*time.Second)) // reading the journal is most of it; a hang fails
	defer cancel()
	var out bytes.Buffer
	old := stdout
	stdout = &out
	defer func() { stdout = old }()
	if err := run(ctx, []string{"fit", "--target", "frank-primary", "--max-num-seqs", "4", "--max-model-len", "262144", path}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"largest   to boot:    1310720 = 5 × 262144  --max-num-seqs 5 --max-model-len 262144 --kv-cache-dtype fp8",
		"          to survive: 1048576 = 4 × 262144  --max-num-seqs 4 --max-model-len 262144 --kv-cache-dtype fp8",
		"left out  rung 6: max_num_seqs: 2000000000 is outside 1..1048576 sequences (beyond any device)",
	} {
		if !strings.Contains(out.String(), want+"\n") && !strings.Contains(out.String(), want+" ") {
			t.Errorf("fit lacks %q:\n%s", want, out.String())
		}
	}
}
