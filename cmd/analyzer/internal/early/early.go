// Package early asks for huge pages for a batch command's first heap
// (thp.AdviseHeap) from a package initializer, before most of the
// program's packages are initialized: Go initializes packages in
// import-path order, each after its imports, and this one imports only
// the standard library and internal/thp. The initializers after it (the
// rule set's prefix regexps, grpc, protobuf, Prometheus' client) then
// allocate into 2 MiB pages instead of ~400 fresh 4 KiB ones: a one-entry
// explain took ~8 % less CPU. main's batchGC advises too, for a batch
// command line Batch does not recognize; the second call does
// nothing.
package early

import (
	"os"
	"slices"

	"github.com/llmfleet/analyzer/internal/thp"
)

// FirstHeap is the heap, in bytes, a batch run fills before its first
// collection, all of it fresh memory: the runtime's minimum heap goal
// (4 MiB at GOGC=100) scaled by the batch GC percentage, 400.
const FirstHeap = 4 << 20 * 400 / 100

// BatchVerbs are the commands that read files in one batch (explain,
// replay, and ladder and fit when given files): short-lived, allocating
// from the start, and bounded in heap, so huge pages cost them nothing
// to risk. serve and watch run for days, where a fault in a huge page
// may stall on compaction (https://go.dev/issue/61718).
var BatchVerbs = []string{"explain", "replay", "ladder", "fit"}

// Batch reports whether a command line (os.Args[1:]) starts with one of
// BatchVerbs; a flag before the verb, or no verb, is not recognized.
func Batch(args []string) bool {
	return len(args) > 0 && slices.Contains(BatchVerbs, args[0])
}

func init() {
	if Batch(os.Args[1:]) {
		_ = thp.AdviseHeap(FirstHeap)
	}
}
