package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// TestInPlaceAcrossFills reads JSON lines of every length up to past the
// in-place window, many of them across the read buffer's refills, in
// place (ReadFile, and Read through a reader that returns a few bytes per
// call) and line by line: the same entries and stats.
func TestInPlaceAcrossFills(t *testing.T) {
	var js bytes.Buffer
	for i := 0; js.Len() < 3*readBufSize; i++ {
		n := (i * 7919) % (inPlaceLine + 4096)
		fmt.Fprintf(&js, `{"__CURSOR":"c%d","__REALTIME_TIMESTAMP":"%d","MESSAGE":"%d %s","X":"y"}`+"\n", i, int64(1700000000000000)+int64(i), i, strings.Repeat("m", n))
	}
	path := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(path, js.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := inPlaceAgainstLines(path, Options{}); err != nil {
		t.Fatal(err)
	}
	got, gst, gerr := collect(func(fn func(domain.Entry) error) (Stats, error) {
		return Read(context.Background(), iotest.HalfReader(bytes.NewReader(js.Bytes())), path, Options{}, fn)
	})
	want, wst, werr := collect(func(fn func(domain.Entry) error) (Stats, error) {
		return ReadFile(context.Background(), path, Options{}, fn)
	})
	if gerr != nil || werr != nil || !reflect.DeepEqual(gst, wst) || !reflect.DeepEqual(got, want) {
		t.Fatalf("through short reads: %d entries, %+v, %v; from the file: %d entries, %+v, %v", len(got), gst, gerr, len(want), wst, werr)
	}
}

// TestInPlaceKeepsReadError: a read error past the first buffer ends the
// run with that error, after every entry before it (the in-place parse
// has taken lines from the buffer up to there).
func TestInPlaceKeepsReadError(t *testing.T) {
	boom := errors.New("boom")
	var js bytes.Buffer
	// Past the first buffer, which format detection reads whole.
	lines := 0
	for ; js.Len() < 2*readBufSize; lines++ {
		fmt.Fprintf(&js, `{"MESSAGE":"line %d %s"}`+"\n", lines, strings.Repeat("x", 100))
	}
	n := 0
	_, err := Read(context.Background(), io.MultiReader(bytes.NewReader(js.Bytes()), iotest.ErrReader(boom)), "in", Options{}, func(domain.Entry) error {
		n++
		return nil
	})
	if !errors.Is(err, boom) || n != lines {
		t.Fatalf("%d entries, error %v; want %d and %v", n, err, lines, boom)
	}
}

// TestInPlaceHandsOverWhatArrived: lines from a pipe reach fn as they
// come, not once the in-place window's worth has arrived.
func TestInPlaceHandsOverWhatArrived(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close() // a failed wait below leaves no reader behind
	got := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		_, err := Read(context.Background(), pr, "-", Options{}, func(e domain.Entry) error {
			got <- e.Message
			return nil
		})
		done <- err
	}()
	var js bytes.Buffer
	for i := range 5 {
		fmt.Fprintf(&js, `{"__CURSOR":"c%d","__REALTIME_TIMESTAMP":"%d","MESSAGE":"line %d"}`+"\n", i, int64(1700000000000000)+int64(i), i)
	}
	if _, err := pw.Write(js.Bytes()); err != nil {
		t.Fatal(err)
	}
	// The reassembly may hold the last line for one that continues it.
	for i := range 4 {
		select {
		case m := <-got:
			if want := fmt.Sprintf("line %d", i); m != want {
				t.Fatalf("entry %d: %q, want %q", i, m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of 5 lines handed over 5 s after they were written", i)
		}
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// FuzzInPlaceAsLines reads arbitrary files as ReadFile does (journald
// JSON records parsed where the read buffer holds them) and line by line:
// the same entries, stats and errors.
func FuzzInPlaceAsLines(f *testing.F) {
	seedLines(f, 3)
	for _, compact := range []bool{false, true} {
		j, _ := testJournal(compact, testJournalEntries, nil)
		f.Add(j)
		f.Add(j[:len(j)*2/3])
	}
	f.Add(inPlaceLines)
	defer func(w int) { inPlaceLine = w }(inPlaceLine)
	// Lines longer than 64 bytes are read as lines.
	inPlaceLine = 64
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := inPlaceAgainstLines(path, Options{MaxLineBytes: 4096}); err != nil {
			t.Fatal(err)
		}
	})
}

// inPlaceAgainstLines reads path as ReadFile does and again with every
// JSON line read as a line first (no in-place window), with opt, and
// describes the first difference in their entries, stats or errors. It
// returns the format read.
func inPlaceAgainstLines(path string, opt Options) (Format, error) {
	got, gst, gerr := collect(func(fn func(domain.Entry) error) (Stats, error) {
		return ReadFile(context.Background(), path, opt, fn)
	})
	defer func(w int) { inPlaceLine = w }(inPlaceLine)
	inPlaceLine = 0
	want, wst, werr := collect(func(fn func(domain.Entry) error) (Stats, error) {
		return ReadFile(context.Background(), path, opt, fn)
	})
	if !reflect.DeepEqual(gst, wst) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
		return gst.Format, fmt.Errorf("%s: in place: %+v, %v\nas lines: %+v, %v", path, gst, gerr, wst, werr)
	}
	if len(got) != len(want) {
		return gst.Format, fmt.Errorf("%s: %d entries in place, %d as lines", path, len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			return gst.Format, fmt.Errorf("%s: entry %d:\nin place: %+v\nas lines: %+v", path, i, got[i], want[i])
		}
	}
	return gst.Format, nil
}

func collect(r func(fn func(domain.Entry) error) (Stats, error)) ([]domain.Entry, Stats, error) {
	var es []domain.Entry
	st, err := r(func(e domain.Entry) error {
		es = append(es, e)
		return nil
	})
	return es, st, err
}
