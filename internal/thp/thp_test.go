package thp

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestAdviseHeapMarksReusedSpace checks the mechanism end to end: right
// after AdviseHeap (which collects the block itself), a large allocation
// lands in the advised space, whose mapping /proc/self/smaps shows with the "hg" flag (VM_HUGEPAGE),
// and where the kernel gives huge pages on request, touching it faults one in.
func TestAdviseHeapMarksReusedSpace(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		t.Skip("kernel without transparent huge pages:", err)
	}
	t.Setenv("GODEBUG", "")
	once = sync.Once{} // a fresh process's first call, whatever ran before
	if err := AdviseHeap(32 << 20); err != nil {
		t.Fatal(err)
	}
	fallbacks := vmstat(t, "thp_fault_fallback")
	b := make([]byte, 8<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	// The middle of b: the block AdviseHeap took need not start on a
	// 2 MiB boundary, and its pages before the first one stay unmarked.
	flags, hugeKB := mappingOf(t, addr(b)+uintptr(len(b)/2))
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("mapping of an 8 MiB allocation after AdviseHeap: VmFlags %q, want hg", flags)
	}
	if !strings.Contains(string(mode), "[never]") && hugeKB == 0 {
		if vmstat(t, "thp_fault_fallback") > fallbacks {
			// The kernel had no free 2 MiB page (memory fragmented or
			// short): the advice held, the kernel declined.
			t.Skip("the kernel fell back to 4 KiB pages (thp_fault_fallback rose)")
		}
		t.Errorf("8 MiB touched in an advised mapping, kernel mode %q: AnonHugePages 0 kB", strings.TrimSpace(string(mode)))
	}
	runtime.KeepAlive(b)
}

// mappingOf returns the VmFlags and AnonHugePages (kB) of the mapping
// that holds address a, from /proc/self/smaps.
func mappingOf(t *testing.T, a uintptr) (flags string, hugeKB int) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && !strings.HasSuffix(fields[0], ":") {
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(a) >= l && uint64(a) < h
				continue
			}
		}
		if !in {
			continue
		}
		switch fields[0] {
		case "AnonHugePages:":
			hugeKB, _ = strconv.Atoi(fields[1])
		case "VmFlags:":
			return strings.Join(fields[1:], " "), hugeKB
		}
	}
	t.Fatalf("no mapping in /proc/self/smaps holds %#x", a)
	return "", 0
}

// vmstat returns a counter of /proc/vmstat (0 when it is missing).
func vmstat(t *testing.T, name string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/vmstat")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == name {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

func TestDisabled(t *testing.T) {
	for godebug, want := range map[string]bool{
		"":                            false,
		"disablethp=1":                true,
		"disablethp=0":                false,
		"madvdontneed=1,disablethp=1": true,
		"disablethp=1, disablethp=0":  false,
		"gctrace=1":                   false,
		"xdisablethp=1":               false,
	} {
		if got := disabled(godebug); got != want {
			t.Errorf("disabled(%q) = %v, want %v", godebug, got, want)
		}
	}
}

func TestWhole(t *testing.T) {
	b := make([]byte, 8<<20)
	w := whole(b)
	if a := addr(w); a%hugePage != 0 || len(w)%hugePage != 0 || len(w) < 6<<20 {
		t.Errorf("whole(8 MiB at %#x) = %d bytes at %#x: want 2 MiB-aligned, at least 6 MiB", addr(b), len(w), a)
	}
	if w := whole(b[:hugePage]); len(w) > hugePage {
		t.Errorf("whole(2 MiB) = %d bytes", len(w))
	}
}

// TestAdviseHeapCollectsBlock checks that the block is gone from the heap
// when AdviseHeap returns: the allocations after it reuse the space
// instead of waiting for a collection the block would bring on.
func TestAdviseHeapCollectsBlock(t *testing.T) {
	t.Setenv("GODEBUG", "")
	once = sync.Once{}
	const size = 64 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_ = AdviseHeap(size) // madvise's error does not matter here
	runtime.ReadMemStats(&after)
	if after.NumGC == before.NumGC {
		t.Errorf("no collection during AdviseHeap (NumGC %d)", after.NumGC)
	}
	if after.HeapAlloc >= size {
		t.Errorf("heap after AdviseHeap(%d): %d bytes allocated, want the block collected", size, after.HeapAlloc)
	}
}

// TestAdviseHeapOnce checks that a second call, from batchGC after a
// package initializer advised, takes no second block.
func TestAdviseHeapOnce(t *testing.T) {
	first := AdviseHeap(4 << 20)
	if allocs := testing.AllocsPerRun(3, func() {
		if err := AdviseHeap(64 << 20); err != first {
			t.Errorf("second AdviseHeap = %v, want the first call's %v", err, first)
		}
	}); allocs != 0 {
		t.Errorf("a later AdviseHeap allocated %.0f times", allocs)
	}
}
