package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// hostileLogs are inputs that once took the analyzer down; each must be
// analyzed in under a second with the rest of its lines processed.
var hostileLogs = map[string]string{
	// A stray closer inside a list made the Python-repr parser append
	// forever (23 GB in 3 s).
	"repr stray closer": "vLLM API server version 1\nnon-default args: {'a':[)]}\nnon-default args: {'max_model_len': 4096}\n",
}

func TestHostileLinesEndQuickly(t *testing.T) {
	for name, text := range hostileLogs {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.txt")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out := runCmd(t, "explain", "--format", "json", path)
			runCmd(t, "replay", "--db", filepath.Join(t.TempDir(), "a.db"), path)
			if d := time.Since(start); d > time.Second {
				t.Fatalf("explain and replay took %v", d)
			}
			var doc struct {
				Attempts []struct {
					Engine string         `json:"engine"`
					Shape  map[string]any `json:"shape"`
				} `json:"attempts"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Attempts) != 1 || doc.Attempts[0].Engine != "vllm" || doc.Attempts[0].Shape["max_model_len"] != 4096.0 {
				t.Fatalf("the lines after the hostile one were not processed: %s", out)
			}
		})
	}
}
