package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/pflag"
)

// profileFlags are the hidden --cpuprofile, --memprofile and --trace
// flags: pprof files of one command run, for finding where a replay's time
// and memory go (go tool pprof bin/analyzer FILE), as `go test -cpuprofile`
// gives for tests, and an execution trace, for how the reader, tracker and
// saver goroutines share the cores (go tool trace FILE).
type profileFlags struct {
	cpu, mem, trace    string
	cpuFile, traceFile *os.File
}

func (p *profileFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile of the command to this file")
	fs.StringVar(&p.mem, "memprofile", "", "write a heap profile (allocations) at the command's end to this file")
	fs.StringVar(&p.trace, "trace", "", "write an execution trace of the command to this file")
	_ = fs.MarkHidden("cpuprofile")
	_ = fs.MarkHidden("memprofile")
	_ = fs.MarkHidden("trace")
}

// start begins the CPU profile and the execution trace asked for.
func (p *profileFlags) start() (err error) {
	if p.traceFile, err = startFile(p.trace, "trace", trace.Start); err != nil {
		return err
	}
	if p.cpuFile, err = startFile(p.cpu, "cpuprofile", pprof.StartCPUProfile); err != nil {
		_ = stopFile(&p.traceFile, "trace", trace.Stop)
	}
	return err
}

// startFile creates path and has begin write to it (nil, nil without a
// path); what names the flag in errors.
func startFile(path, what string, begin func(io.Writer) error) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := begin(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return f, nil
}

// stopFile ends the writing startFile began (end) and closes *f, if any.
func stopFile(f **os.File, what string, end func()) error {
	if *f == nil {
		return nil
	}
	end()
	err := (*f).Close()
	*f = nil
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// stop ends the CPU profile and the trace and writes the heap profile.
func (p *profileFlags) stop() error {
	terr := stopFile(&p.traceFile, "trace", trace.Stop)
	if err := stopFile(&p.cpuFile, "cpuprofile", pprof.StopCPUProfile); err != nil {
		return err
	}
	if terr != nil {
		return terr
	}
	if p.mem == "" {
		return nil
	}
	f, err := os.Create(p.mem)
	if err != nil {
		return fmt.Errorf("memprofile: %w", err)
	}
	defer f.Close()
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		return fmt.Errorf("memprofile: %w", err)
	}
	return f.Close()
}
