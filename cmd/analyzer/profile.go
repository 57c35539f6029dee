package main

import (
	"fmt"
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
func (p *profileFlags) start() error {
	if p.trace != "" {
		f, err := os.Create(p.trace)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return fmt.Errorf("trace: %w", err)
		}
		p.traceFile = f
	}
	if p.cpu == "" {
		return nil
	}
	f, err := os.Create(p.cpu)
	if err != nil {
		return fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("cpuprofile: %w", err)
	}
	p.cpuFile = f
	return nil
}

// stop ends the CPU profile and the trace and writes the heap profile.
func (p *profileFlags) stop() error {
	if p.traceFile != nil {
		trace.Stop()
		if err := p.traceFile.Close(); err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		p.traceFile = nil
	}
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		p.cpuFile = nil
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
