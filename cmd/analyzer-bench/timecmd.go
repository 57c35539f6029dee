package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// timeCommand runs argv with this process's standard streams, as time(1)
// does, and writes one line to out: its wall-clock seconds and the CPU
// seconds (user + system) it and its waited-for children used, from
// wait4(2)'s rusage, which counts in microseconds (time(1) prints CPU time
// in 10 ms steps, a tenth of a 43.5k-line run). CPU time is what a busy
// neighbour on the shared cores moves least: time spent waiting for the
// core is not counted. Peak RSS is left to time(1) (make bench runs it
// under this): a child started from a Go process counts the parent's
// ~9 MiB in its own peak until it execs. It returns the command's exit
// status (-1 when it could not start or was killed).
func timeCommand(out string, argv []string) (int, error) {
	if len(argv) == 0 {
		return -1, errors.New("-time needs a command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return -1, err
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return -1, errors.New("no rusage from wait4")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	line := fmt.Sprintf("%.6f %.6f\n", wall.Seconds(), cpu.Seconds())
	if err := os.WriteFile(out, []byte(line), 0o644); err != nil {
		return -1, err
	}
	return cmd.ProcessState.ExitCode(), nil
}
