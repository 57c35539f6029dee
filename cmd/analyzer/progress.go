package main

import (
	"log/slog"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressMinBytes is the file size from which replay shows a bar.
const progressMinBytes = 4 << 20

type progressBar struct{ bar *progressbar.ProgressBar }

// newProgressBar returns a bar for path when stderr is a terminal and the
// file is large, else nil (a nil bar does nothing).
func newProgressBar(path string) *progressBar {
	if path == "-" || !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() < progressMinBytes {
		return nil
	}
	return &progressBar{bar: progressbar.DefaultBytes(fi.Size(), "replay "+path)}
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

// progressFor is pipeline's progress hook: a bar for a large file read on
// a terminal, nothing otherwise.
func progressFor(name string) (update func(bytesRead int64), done func()) {
	bar := newProgressBar(name)
	if bar == nil {
		return nil, nil
	}
	return bar.set, bar.finish
}

// warn prints a pipeline warning on stderr.
func warn(msg string) { slog.Warn(msg) }
