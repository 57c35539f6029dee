// Package early tunes the runtime for a batch command (explain, replay,
// ...) from a package initializer: huge pages for its heap
// (thp.AdviseHeap) and no heap-profile sampling unless --memprofile asks.
// It asks for the huge pages before most of the
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
	"runtime"
	"slices"
	"strings"

	"github.com/llmfleet/analyzer/internal/thp"
)

// AdvisedHeap is the heap, in bytes, a batch command asks huge pages for
// from the start: all of the soft memory limit it runs under (main's
// batchMemoryLimit; a test keeps the two equal). Only the 16 MiB the heap
// fills before its first collection (the runtime's 4 MiB minimum goal at
// GOGC=400) were advised until 2026-12-07; on that day's build machine,
// where a 4 KiB fault cost ~14 µs and a warm 2 MiB one ~0.1 ms, the heap's
// growth past them was half the faults of explain on the night journal
// (3,479 of 5,993), and advising the whole limit made explain 9-12 %
// faster and replay 8 % faster on it, serving 2-3 %, at the same peak RSS
// (11 interleaved rounds each; 1M-line journals the same within 1 %).
const AdvisedHeap = 38 << 20

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

// ProfilesMemory reports whether a command line asks for a heap profile
// (main's hidden --memprofile flag, as "--memprofile FILE" or
// "--memprofile=FILE").
func ProfilesMemory(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "--memprofile" || strings.HasPrefix(a, "--memprofile=")
	})
}

func init() {
	args := os.Args[1:]
	if !Batch(args) {
		return
	}
	// The runtime samples an allocation every 512 KiB on average for a
	// heap profile nobody reads unless --memprofile asks: each sample
	// walks the stack and its buckets live off the heap (~70 page faults
	// of a night explain). Off from here on, explain of the 43.5k-line
	// night journal took 2 % less time (15 interleaved rounds).
	if !ProfilesMemory(args) {
		runtime.MemProfileRate = 0
	}
	_ = thp.AdviseHeap(AdvisedHeap)
}
