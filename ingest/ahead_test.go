package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// ReadAhead hands over exactly what ReadFile does, in the same order, with
// the same stats.
func TestReadAheadSameAsReadFile(t *testing.T) {
	paths, _ := filepath.Glob("../examples/*.journal.json")
	if len(paths) == 0 {
		t.Fatal("no examples")
	}
	crossed := false
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			var serial, ahead []domain.Entry
			s1, err := ReadFile(context.Background(), p, Options{}, func(e domain.Entry) error { serial = append(serial, e); return nil })
			if err != nil {
				t.Fatal(err)
			}
			s2, err := ReadAhead(context.Background(), p, Options{}, func(e domain.Entry) error { ahead = append(ahead, e); return nil })
			if err != nil {
				t.Fatal(err)
			}
			crossed = crossed || len(serial) > aheadBatch
			if !reflect.DeepEqual(serial, ahead) || !reflect.DeepEqual(s1, s2) {
				t.Errorf("ReadAhead differs: %d vs %d entries, stats %+v vs %+v", len(ahead), len(serial), s2, s1)
			}
		})
	}
	if !crossed {
		t.Error("no example has more than one batch of entries")
	}
}

// An error from fn stops the reader, comes back as is, and leaves no
// goroutine behind.
func TestReadAheadStopsOnError(t *testing.T) {
	before := runtime.NumGoroutine()
	stop := errors.New("enough")
	n := 0
	_, err := ReadAhead(context.Background(), "../examples/dankserver-night-ladder.journal.json", Options{}, func(domain.Entry) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 10 {
		t.Errorf("err %v after %d entries, want %v after 10", err, n, stop)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after, %d before", g, before)
	}
	if _, err := ReadAhead(context.Background(), "../examples/nope.json", Options{}, func(domain.Entry) error { return nil }); err == nil {
		t.Error("a missing file gave no error")
	}
}

// With a second core, the reader gets up to aheadStartDepth batches ahead
// while fn's first call waits (for the rules to compile, in a batch run),
// and no more than aheadDepth once fn has taken that many; with one core,
// aheadDepth from the start.
func TestAheadReadsDeeperUntilFnStarts(t *testing.T) {
	for _, procs := range []int{2, 1} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			start := aheadDepth
			if procs > 1 {
				start = aheadStartDepth
			}
			const total = 64 * aheadBatch
			var emitted atomic.Int64
			read := func(ctx context.Context, emit func(domain.Entry) error) (Stats, error) {
				for i := range total {
					emitted.Add(1)
					if err := emit(domain.Entry{Message: strconv.Itoa(i)}); err != nil {
						return Stats{}, err
					}
				}
				return Stats{Entries: total}, nil
			}
			// settled is how far the reader got once it stopped.
			settled := func() int64 {
				last := int64(-1)
				for n := emitted.Load(); n != last; n = emitted.Load() {
					last = n
					time.Sleep(20 * time.Millisecond)
				}
				return last
			}
			taken := 0
			var first, later int64
			_, err := Ahead(context.Background(), read, func(e domain.Entry) error {
				if e.Message != strconv.Itoa(taken) {
					t.Fatalf("entry %d is %q", taken, e.Message)
				}
				taken++
				switch taken {
				case 1:
					first = settled()
				case 40 * aheadBatch:
					later = settled() - int64(taken)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// Stopped: the batch fn holds, start-1 waiting, one filled and
			// waiting for a token.
			if want := int64(start+1) * aheadBatch; first != want {
				t.Errorf("before fn returned once, the reader emitted %d entries, want %d", first, want)
			}
			if procs > 1 && first <= int64(aheadDepth+1)*aheadBatch {
				t.Errorf("with two cores the reader got no further ahead at the start (%d entries) than later", first)
			}
			if most := int64(aheadDepth+1) * aheadBatch; later > most {
				t.Errorf("later the reader was %d entries ahead of fn, want at most %d", later, most)
			}
			if taken != total {
				t.Errorf("fn took %d entries, want %d", taken, total)
			}
		})
	}
}
