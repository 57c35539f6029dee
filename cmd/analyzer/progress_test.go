package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExplainShowsReplaysBar: explain of a large file draws on a terminal
// the bar replay draws, named after the command and the file; not on a
// pipe.
func TestExplainShowsReplaysBar(t *testing.T) {
	// A journal of a few MB: one vLLM boot whose ready server logs its
	// metrics line for hours.
	var b strings.Builder
	b.WriteString("Mar 23 05:00:50 gpu1 systemd[1]: Started vllm.service - vLLM.\n")
	b.WriteString("Mar 23 05:00:57 gpu1 vllm[2239]: INFO 03-23 05:00:57 [api_server.py:977] vLLM API server version 0.8.1\n")
	for b.Len() < progressMinBytes+(1<<20) {
		b.WriteString("Mar 23 05:10:00 gpu1 vllm[2239]: INFO 03-23 05:10:00 [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n")
	}
	path := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	oldOut, oldTerm := progressOut, progressOnTerminal
	defer func() { progressOut, progressOnTerminal = oldOut, oldTerm }()
	for _, tty := range []bool{true, false} {
		var bar bytes.Buffer
		progressOut, progressOnTerminal = &bar, func() bool { return tty }
		out := runCmd(t, "explain", path)
		if !strings.Contains(out, "1 attempt") {
			t.Fatalf("explain output:\n%s", out)
		}
		drawn := strings.Contains(bar.String(), "explain "+path) && strings.Contains(bar.String(), "100%")
		if drawn != tty {
			t.Errorf("on a terminal %v: bar drawn %v: %q", tty, drawn, bar.String())
		}
		if strings.Contains(out, "100%") {
			t.Error("the bar went to stdout")
		}
	}
}
