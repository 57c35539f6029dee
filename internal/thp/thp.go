// Package thp asks Linux to back a batch run's Go heap with transparent
// huge pages.
//
// The Go runtime maps its heap without MADV_HUGEPAGE: as of Go 1.21.4 it
// marks none of it (https://go.dev/issue/64342), because where the kernel
// compacts memory on such a fault the fault can stall an allocation
// (https://go.dev/issue/61718), which a server must not. So where the
// kernel's transparent_hugepage setting is "madvise", the default of most
// distributions, every 4 KiB page the heap first touches is a page fault.
// In a virtual machine one costs ~12 µs (this project's build machine, a
// Firecracker guest): explain of a 43.5k-line journal took ~4,000 of them,
// a fifth of its time. One 2 MiB page replaces 512. A batch run accepts
// the stall: its heap is bounded (AdviseHeap's size), so at most size/2 MiB
// faults can stall, and its throughput is what counts.
package thp

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on x86-64 and arm64
// with 4 KiB base pages; madvise applies to whole pages of it only.
const hugePage = 2 << 20

// AdviseHeap maps the next size bytes of the Go heap now and marks them
// MADV_HUGEPAGE, so the allocations that later reuse that space fault in
// 2 MiB pages where the kernel has them. size is in bytes; a batch run
// passes the soft memory limit its heap runs under. The space is
// taken as one block with the collector off, and then collected at once
// (runtime.GC), so the allocations after AdviseHeap reuse it. Left to the
// collector, the block put the heap over its goal, and the collection it
// brought on marked while the package initializers after early's ran
// (write barriers on, allocations assisting): a one-entry explain took
// ~1.2 ms more CPU of its ~15 than with the collection here, where the
// heap holds almost nothing to mark. At the start of a run the block is
// fresh memory, which the runtime does not zero: it costs address space,
// not memory.
//
// It advises once per process: a later call returns the first one's
// error. It does nothing when GODEBUG has disablethp=1, the runtime's own
// switch against huge pages for the heap. The error is madvise's (EINVAL
// where the kernel has no transparent huge pages); the run goes on
// without them either way.
//
// The package imports only the standard library, so that a package
// initializer may call it before most of a program's other packages are
// initialized (Go initializes packages in import-path order, each after
// its imports): their package-level data then lands in the advised space.
func AdviseHeap(size int) error {
	once.Do(func() { adviseErr = adviseHeap(size) })
	return adviseErr
}

var (
	once      sync.Once
	adviseErr error
)

func adviseHeap(size int) error {
	if disabled(os.Getenv("GODEBUG")) || size < 2*hugePage {
		return nil
	}
	err := advise(size)
	runtime.GC()
	return err
}

// advise takes size bytes with the collector off and marks their 2 MiB
// pages; the block is garbage when it returns.
func advise(size int) error {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	block := make([]byte, size)
	return syscall.Madvise(whole(block), syscall.MADV_HUGEPAGE)
}

// whole returns the 2 MiB-aligned pages inside b.
func whole(b []byte) []byte {
	start := addr(b)
	lo := (start + hugePage - 1) &^ (hugePage - 1)
	hi := (start + uintptr(len(b))) &^ (hugePage - 1)
	if hi <= lo {
		return nil
	}
	return b[lo-start : hi-start]
}

// addr is the address of b's first byte: whole's page arithmetic needs
// it as a number, and nothing converts it back to a pointer.
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// disabled reports whether a GODEBUG value sets disablethp to anything
// but 0 (the last setting wins, as in the runtime).
func disabled(godebug string) bool {
	off := false
	for _, kv := range strings.Split(godebug, ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && k == "disablethp" {
			off = v != "0"
		}
	}
	return off
}
