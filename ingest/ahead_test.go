package ingest

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"runtime"
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
