package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressMinBytes is the file size from which replay and explain show a
// bar.
const progressMinBytes = 4 << 20

// progressOut is where bars are drawn, and progressOnTerminal whether it is
// a terminal (tests replace both).
var (
	progressOut        io.Writer = os.Stderr
	progressOnTerminal           = func() bool { return term.IsTerminal(int(os.Stderr.Fd())) }
)

type progressBar struct{ bar *progressbar.ProgressBar }

// newProgressBar returns a bar described as verb and path when stderr is a
// terminal and the file is large, else nil (a nil bar does nothing). It is
// progressbar.DefaultBytes drawn on progressOut.
func newProgressBar(verb, path string) *progressBar {
	if path == "-" || !progressOnTerminal() {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() < progressMinBytes {
		return nil
	}
	out := progressOut
	return &progressBar{bar: progressbar.NewOptions64(fi.Size(),
		progressbar.OptionSetDescription(verb+" "+path),
		progressbar.OptionSetWriter(out),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionSetWidth(10),
		progressbar.OptionThrottle(65*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionOnCompletion(func() { fmt.Fprint(out, "\n") }),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionFullWidth(),
		progressbar.OptionSetRenderBlankState(true),
	)}
}

func (p *progressBar) set(n int64) {
	if p != nil {
		_ = p.bar.Set64(n)
	}
}

func (p *progressBar) finish() {
	if p != nil {
		_ = p.bar.Finish()
	}
}

// progressFor is pipeline's progress hook for a command (verb): a bar for
// a large file read on a terminal, nothing otherwise.
func progressFor(verb string) func(name string) (update func(bytesRead int64), done func()) {
	return func(name string) (func(int64), func()) {
		bar := newProgressBar(verb, name)
		if bar == nil {
			return nil, nil
		}
		return bar.set, bar.finish
	}
}

// warn prints a pipeline warning on stderr.
func warn(msg string) { slog.Warn(msg) }
