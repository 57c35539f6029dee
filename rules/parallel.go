package rules

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// eachParallel calls f(i) for every i in [0, n) on up to GOMAXPROCS
// goroutines, and returns when all have returned. Load parses files and
// compiles engines and rules this way: each is independent of the others
// (the pattern memo is shared under its lock), and they are most of
// loading the built-in rules, the largest part of a short command's run. f
// writes its result to slot i; the caller reads them in order, so the set
// and its errors do not depend on timing.
func eachParallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// compileAll runs compile on every spec on every core (eachParallel) and
// returns each result and its errors at its spec's index.
func compileAll[S, T any](specs []S, compile func(S) (T, Errors)) ([]T, []Errors) {
	out := make([]T, len(specs))
	errs := make([]Errors, len(specs))
	eachParallel(len(specs), func(i int) { out[i], errs[i] = compile(specs[i]) })
	return out, errs
}
