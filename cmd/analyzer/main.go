// Command analyzer explains the journal of hosts that run LLM inference
// engines: it cuts the log into boot attempts, follows each attempt's phase
// and shape, and names its root cause with rule files.
//
//	analyzer explain [--format text|json] [--rules DIR] FILE...
//	analyzer replay  [--db PATH] [--rules DIR] FILE...
//	analyzer serve   [--db PATH] [--listen 127.0.0.1:8080]
//	analyzer ladder  [--db PATH] [--target NAME] [--host H] [--format table|json] [FILE...]
//	analyzer rules test|lint [DIR]
//
// This package only wires the others together.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/llmfleet/analyzer/metrics"
)

const usage = `usage:
  analyzer explain [--format text|json] [--rules DIR] FILE...   print the boot attempts of journal or log files
  analyzer replay  [--db PATH] [--rules DIR] FILE...              record them into SQLite
  analyzer serve   [--db PATH] [--listen ADDR]                    web UI and JSON API over the database
  analyzer ladder  [--db PATH] [--target NAME] [--host H] [--format table|json] [FILE...]
                                                                  boot ladders: rungs, boundaries, next rung
  analyzer rules test [DIR]                                       run the tests embedded in the rule files
  analyzer rules lint [DIR]                                       validate the rule files

FILE is journalctl -o json / json-seq / export output or plain engine output
(detected per file); "-" reads standard input.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprint(os.Stderr, usage)
			if ue.msg != "" {
				fmt.Fprintln(os.Stderr, "\nanalyzer:", ue.msg)
			}
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "analyzer:", err)
		os.Exit(1)
	}
}

// stdout is where commands print their results (tests capture it).
var stdout io.Writer = os.Stdout

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(ctx context.Context, args []string) error {
	err := dispatch(ctx, args)
	var ue usageError
	if errors.As(err, &ue) && ue.msg == flag.ErrHelp.Error() {
		return nil // -h: the command printed its usage to stdout
	}
	return err
}

func dispatch(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageError{}
	}
	switch args[0] {
	case "explain":
		return cmdExplain(ctx, args[1:])
	case "replay":
		return cmdReplay(ctx, args[1:])
	case "serve":
		return cmdServe(ctx, args[1:])
	case "ladder":
		return cmdLadder(ctx, args[1:])
	case "rules":
		return cmdRules(args[1:])
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "--version", "version":
		fmt.Fprintln(stdout, "analyzer", version())
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

// newFlags returns a command's flag set; -h prints the command's own
// flags to stdout (exit 0).
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: analyzer %s [flags]%s\n\nflags (anywhere on the line):\n", name, commandArgs[name])
		fs.PrintDefaults()
	}
	return fs
}

// announceDB says which database a command uses when --db was not given:
// every command shares the default, so one can see where the attempts go.
func announceDB(fs *flag.FlagSet, path string) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "db" })
	if !given {
		fmt.Fprintf(os.Stderr, "analyzer: database %s (--db chooses another)\n", path)
	}
}

// commandArgs are the commands' arguments after the flags, for -h.
var commandArgs = map[string]string{"explain": " FILE...", "replay": " FILE...", "ladder": " [FILE...]"}

// parseFlags parses args with flags anywhere among the files, as
// journalctl and kubectl allow ("explain FILE -o json"): flags and their
// values are moved before the other arguments; "--" ends the flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil && i+1 < len(args) {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
			i++
			flags = append(flags, args[i])
		}
	}
	return fs.Parse(append(append(flags, "--"), rest...))
}

// buildVersion is stamped by make build (-ldflags -X main.buildVersion=...,
// from git describe).
var buildVersion string

// version is the stamped version, else the module version and VCS revision
// the Go toolchain recorded, and the Go version.
func version() string {
	v, rev, goVersion := metrics.BuildInfo()
	if buildVersion != "" {
		return buildVersion + " " + goVersion
	}
	if rev != "unknown" {
		short, dirty := strings.CutSuffix(rev, "-dirty")
		if len(short) > 12 {
			short = short[:12]
		}
		v += " (" + short
		if dirty {
			v += ", modified"
		}
		v += ")"
	}
	return v + " " + goVersion
}
