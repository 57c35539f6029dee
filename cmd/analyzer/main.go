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
	"syscall"
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
	}
	return usageError{fmt.Sprintf("unknown command %q", args[0])}
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	return fs
}
