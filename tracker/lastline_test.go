package tracker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// TestLastLineAt: an attempt's LastLineAt is the time of its newest line,
// also of lines that mark no phase and match no rule (a weight loader's
// progress), and another unit's lines do not move it.
func TestLastLineAt(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	tr := tracker.New(set, tracker.Options{})
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := 0
	line := func(unit string, sec int, msg string) {
		n++
		tr.Add(domain.Entry{Cursor: fmt.Sprint("c", n), Time: at.Add(time.Duration(sec) * time.Second), Host: "h", Unit: unit,
			InvocationID: "inv-" + unit, PID: 7, Identifier: "vllm", Message: msg, Journal: true, Fields: map[string]string{"_TRANSPORT": "stdout"}})
	}
	line("a.service", 0, "$ vllm serve /models/qwen --max-model-len 8192")
	line("a.service", 20, "INFO 12-01 10:00:20 [gpu_model_runner.py:1] Starting to load model /models/qwen...")
	for i := 1; i <= 30; i++ {
		line("a.service", 20+i*30, fmt.Sprintf("Loading safetensors checkpoint shards: %d%% Completed | %d/30", i*100/30, i))
	}
	line("b.service", 2000, "$ vllm serve /models/llama --max-model-len 4096")
	got := map[string]*domain.Attempt{}
	for _, a := range tr.Attempts() {
		got[a.Unit] = a
	}
	a, b := got["a.service"], got["b.service"]
	if a == nil || b == nil {
		t.Fatalf("attempts: %v", got)
	}
	if want := at.Add(920 * time.Second); !a.LastLineAt.Equal(want) || a.Lines != 32 {
		t.Errorf("a: last line at %v after %d lines, want %v after 32", a.LastLineAt, a.Lines, want)
	}
	if want := at.Add(2000 * time.Second); !b.LastLineAt.Equal(want) {
		t.Errorf("b: last line at %v, want %v", b.LastLineAt, want)
	}
}
