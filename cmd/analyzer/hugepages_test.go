package main

import (
	"testing"

	"github.com/llmfleet/analyzer/cmd/analyzer/internal/early"
)

// TestEarlyKnowsTheBatchCommands keeps package early, which cannot import
// main, in step with it: each verb it advises for is a command of the
// root, and the heap it advises is the one batchGC's limit allows.
func TestEarlyKnowsTheBatchCommands(t *testing.T) {
	root := newRootCmd()
	for _, v := range early.BatchVerbs {
		cmd, _, err := root.Find([]string{v})
		if err != nil || cmd == root || cmd.Name() != v {
			t.Errorf("early.BatchVerbs has %q, which is no command of analyzer", v)
		}
	}
	if early.AdvisedHeap != batchMemoryLimit {
		t.Errorf("early.AdvisedHeap = %d, want batchMemoryLimit, %d", early.AdvisedHeap, batchMemoryLimit)
	}
}
