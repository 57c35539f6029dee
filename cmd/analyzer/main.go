// Command analyzer explains the journal of hosts that run LLM inference
// engines: it cuts the log into boot attempts, follows each attempt's phase
// and shape, and names its root cause with rule files.
//
//	analyzer explain [-o text|json] [--rules DIR] [filters] FILE...
//	analyzer replay  [--db PATH] [--rules DIR] FILE...
//	analyzer serve   [--db PATH] [--listen 127.0.0.1:8080]
//	analyzer ladder  [--db PATH] [--target NAME] [--host H] [-o table|json] [FILE...]
//	analyzer fit     --target NAME [--host H] --max-num-seqs N --max-model-len N [--kv-cache-dtype D]
//	                 [--kv-cache-memory-bytes B | --gpu-memory-utilization U] [--db PATH] [-o table|json] [FILE...]
//	analyzer rules test|lint [DIR]
//	analyzer completion bash|zsh|fish|powershell
//
// This package only wires the others together: each command's flags are
// declared in its new*Cmd function and its work done by a function over the
// parsed values.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/metrics"
)

// rootLong is the root command's help: what the analyzer does, what FILE
// is, and the exit statuses scripts can rely on.
const rootLong = `analyzer explains the journal of hosts that run LLM inference engines: it
cuts the log into boot attempts, follows each attempt's phase and shape, and
names its root cause with rule files.

FILE is journalctl -o json / json-seq / export output or plain engine output
(detected per file); "-" reads standard input. Flags may stand anywhere on
the line, before or after the files; "--" ends them.

Exit status:
  0  success
  1  an error, or a failure found when asked for one (explain --exit-status:
     a selected attempt failed; rules test: a rule test failed)
  2  usage error: unknown command or flag, bad flag value, missing FILE`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := exitStatus(run(ctx, os.Args[1:]), os.Stderr)
	stop()
	os.Exit(code)
}

// stdout is where commands print their results and help (tests capture
// it); stderr is where they print warnings and progress.
var (
	stdout io.Writer = os.Stdout
	stderr io.Writer = os.Stderr
)

// usageError is a command line the analyzer cannot run: exit status 2.
// cmd is the command whose help explains it.
type usageError struct{ msg, cmd string }

func (e usageError) Error() string { return e.msg }

// errFailureFound is returned when the operator asked for a failure to be
// reported in the exit status (explain --exit-status) and one was found:
// exit status 1, the output is printed as usual.
type errFailureFound struct{ failed, total int }

func (e errFailureFound) Error() string {
	return fmt.Sprintf("%d of %d attempts failed", e.failed, e.total)
}

// exitStatus prints err to w and returns the process exit status: 0 on
// success, 2 for a usage error, 1 for anything else.
func exitStatus(err error, w io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(w, "analyzer:", err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", or(ue.cmd, "analyzer"))
		return 2
	}
	return 1
}

// run parses args and runs the command they name. A usage error comes back
// as usageError naming the command's help.
func run(ctx context.Context, args []string) error {
	root := newRootCmd()
	root.SetArgs(longDashes(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	var ue usageError
	if errors.As(err, &ue) && ue.cmd == "" && cmd != nil {
		ue.cmd = cmd.CommandPath()
		return ue
	}
	return err
}

// newRootCmd builds the command tree; each call returns fresh flag values.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "analyzer",
		Short:         "explain why LLM inference engines fail to boot",
		Long:          rootLong,
		Version:       version(),
		SilenceErrors: true, // main prints them (exitStatus)
		SilenceUsage:  true, // an error is not a reason for a page of help
		Args:          cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				c.SetOut(stderr)
				_ = c.Usage()
				return usageError{msg: "a command is needed"}
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg += "; did you mean " + strings.Join(s, " or ") + "?"
			}
			return usageError{msg: msg}
		},
	}
	lf := &logFlags{}
	root.PersistentFlags().StringVar(&lf.level, "log-level", "info", "least severe log messages shown: debug, info, warn, error")
	root.PersistentFlags().StringVar(&lf.format, "log-format", "text", "log format on stderr: text (logfmt) or json")
	pf := &profileFlags{}
	pf.add(root.PersistentFlags())
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		l, err := newLogger(stderr, lf.level, lf.format)
		if err != nil {
			return usageError{msg: err.Error(), cmd: c.CommandPath()}
		}
		slog.SetDefault(l)
		return pf.start()
	}
	root.PersistentPostRunE = func(*cobra.Command, []string) error { return pf.stop() }
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SuggestionsMinimumDistance = 2
	root.SetVersionTemplate("analyzer {{.Version}}\n")
	// Every bad flag or flag value is a usage error (exit 2).
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{msg: err.Error(), cmd: c.CommandPath()}
	})
	root.AddCommand(newExplainCmd(), newReplayCmd(), newServeCmd(), newLadderCmd(), newFitCmd(), newRulesCmd(), newWatchCmd(), &cobra.Command{
		Use:   "version",
		Short: "print the analyzer's version (as --version)",
		Args:  noArgs,
		Run:   func(c *cobra.Command, _ []string) { fmt.Fprintln(c.OutOrStdout(), "analyzer", version()) },
	})
	return root
}

// needFiles is the Args check of commands that read at least one FILE.
func needFiles(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageError{msg: c.Name() + " needs at least one FILE", cmd: c.CommandPath()}
	}
	return nil
}

// noArgs is the Args check of commands without arguments.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{msg: fmt.Sprintf("%s takes no arguments, got %q", c.CommandPath(), args[0]), cmd: c.CommandPath()}
	}
	return nil
}

// completeFiles offers file names for FILE arguments.
func completeFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveDefault
}

// completeValues completes a flag from a fixed list of values.
func completeValues(c *cobra.Command, flag string, values ...string) {
	_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// longDashes rewrites the single-dash long flags the analyzer accepted
// before it used pflag ("-db x", "-format=json") into their double-dash
// form, so that scripts and unit files written for it keep working.
// Values of flags and everything after "--" are left alone.
func longDashes(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return args
	}
	cmd.InitDefaultHelpFlag()
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(a, "--"):
			f = cmd.Flag(name)
		case len(name) > 1:
			if f = cmd.Flag(name); f != nil {
				out[i] = "-" + a
			}
		default:
			f = cmd.Flags().ShorthandLookup(name)
		}
		if f != nil && !hasValue && f.NoOptDefVal == "" {
			i++ // the flag's value, whatever it looks like ("--since -1h")
		}
	}
	return out
}

// announceDB says which database a command uses when --db was not given:
// every command shares the default, so one can see where the attempts go.
func announceDB(fs *pflag.FlagSet, path string) {
	if !fs.Changed("db") {
		slog.Info("database (--db chooses another)", "path", path)
	}
}

// noEffect warns on stderr about each flag of names that was given although
// it changes nothing, because of why ("--no-journal is set").
func noEffect(fs *pflag.FlagSet, why string, names ...string) {
	for _, n := range names {
		if fs.Changed(n) {
			slog.Warn("--"+n+" has no effect", "why", why)
		}
	}
}

// buildVersion is stamped by make build (-ldflags -X main.buildVersion=...,
// from git describe).
var buildVersion string

// version is the stamped version, else the module version and VCS revision
// the Go toolchain recorded, and the Go version.
func version() string {
	_, _, goVersion := metrics.BuildInfo()
	return versionLabel() + " " + goVersion
}

// versionLabel is version without the Go version: analyzer_build_info's
// version label, so /metrics and --version say the same.
func versionLabel() string {
	v, rev, _ := metrics.BuildInfo()
	if buildVersion != "" {
		return buildVersion
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
	return v
}
