package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/llmfleet/analyzer/progress"
	"github.com/llmfleet/analyzer/report"
)

// maxBootsBytes bounds the /api/v1/boots answer watch reads.
const maxBootsBytes = 8 << 20

type watchOpts struct {
	url      string
	interval time.Duration
	once     bool
	// The local sources (watchlocal.go): the local journal, a journal
	// directory or a file being appended to, instead of a serve.
	journal                 bool
	dir, file               string
	db, rules, since, units string
	stallQuiet, stallFloor  time.Duration
}

// local reports whether o reads a journal itself instead of a serve.
func (o watchOpts) local() bool { return o.journal || o.dir != "" || o.file != "" }

func newWatchCmd() *cobra.Command {
	var o watchOpts
	c := &cobra.Command{
		Use:   "watch [--url URL | --journal | --directory DIR | --file FILE]",
		Short: "follow the boots in progress (of a running serve, or of a journal): phase, bar, time to ready, stalls",
		Long: `Show one line per boot in progress: the phase and how long it has been in it, a bar of the
time elapsed against the expected time to ready, the expected time to ready (median, 90 % bound,
from the unit's earlier boots), or that it stalled. On a terminal the lines are redrawn in place;
piped, a line is printed when a boot appears, changes phase, stalls or ends, like kubectl get -w.

The boots come from a running analyzer serve (--url, its GET /api/v1/boots), or from a journal
watch reads itself: the local journal (--journal), the journal files of a directory (--directory),
or a file being appended to (--file: journalctl -o json or export output, read from its start and
then as it grows; plain text has no host and no clock, so shows no boot). A journal is read from
24 h back (--since) into a pipeline kept in memory: nothing is written, no note is sent; --db,
when given, is only read, for the units' earlier boots.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			n := 0
			for _, on := range []bool{o.journal, o.dir != "", o.file != ""} {
				if on {
					n++
				}
			}
			switch {
			case n > 1:
				return usageError{msg: "give one of --journal, --directory and --file"}
			case n == 1 && c.Flags().Changed("url"):
				return usageError{msg: "--url watches a serve; --journal, --directory and --file read a journal here: give one"}
			case n == 0:
				noEffect(c.Flags(), "watch asks a serve (--url); these read a journal here", "db", "rules", "since", "units", "stall-quiet", "stall-floor")
			}
			return runWatch(c.Context(), o, stdout, isTerminal(stdout))
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.url, "url", "http://127.0.0.1:8080", "the serve to watch")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "how often to redraw (and ask the serve)")
	fs.BoolVar(&o.once, "once", false, "print the boots once and exit")
	fs.BoolVar(&o.journal, "journal", false, "read the local journal instead of asking a serve")
	fs.StringVar(&o.dir, "directory", "", "read the journal files of this directory instead of asking a serve")
	fs.StringVar(&o.file, "file", "", "read this file as it is appended to (journalctl -o json or export) instead of asking a serve")
	fs.StringVar(&o.db, "db", "", "with a journal: a database to read the units' earlier boots from (never written)")
	fs.StringVar(&o.rules, "rules", "", "with a journal: rule directory (default: the built-in rules)")
	fs.StringVar(&o.since, "since", "", "with --journal or --directory: read from this time (default: 24 h back)")
	fs.StringVar(&o.units, "units", "", "with --journal or --directory: comma-separated unit globs to follow (default: every unit)")
	fs.DurationVar(&o.stallQuiet, "stall-quiet", progress.DefaultQuiet,
		"with a journal: a boot whose phase the unit's earlier boots do not tell has stalled once it printed nothing for this long")
	fs.DurationVar(&o.stallFloor, "stall-floor", progress.StallMargin,
		"with a journal: a boot has stalled in a phase after max(3 × the phase's p90 in the unit's earlier boots, p90 + this)")
	return c
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// bootsJSON is GET /api/v1/boots as watch reads it.
type bootsJSON struct {
	Boots []struct {
		ID       string `json:"id"`
		Host     string `json:"host"`
		Unit     string `json:"unit"`
		Progress *struct {
			Phase      string   `json:"phase"`
			Elapsed    float64  `json:"elapsed_s"`
			InPhase    float64  `json:"in_phase_s"`
			ETAP50     *float64 `json:"eta_p50_s"`
			ETAP90     *float64 `json:"eta_p90_s"`
			Basis      int      `json:"basis"`
			PhaseP50   *float64 `json:"phase_p50_s"`
			PhaseP90   *float64 `json:"phase_p90_s"`
			StallLimit float64  `json:"stall_limit_s"`
			Stalled    bool     `json:"stalled"`
		} `json:"progress"`
	} `json:"boots"`
}

// runWatch is `analyzer watch`: it asks url every interval until ctx ends
// (or once), redrawing in place on a terminal and printing changes when
// piped.
func runWatch(ctx context.Context, o watchOpts, out io.Writer, tty bool) error {
	if o.interval < 100*time.Millisecond {
		return usageError{msg: "--interval must be at least 100ms"}
	}
	base := strings.TrimSuffix(o.url, "/")
	client := &http.Client{Timeout: 10 * time.Second}
	fetch := func() ([]report.BootView, []string, error) { return fetchBoots(ctx, client, base) }
	if o.local() {
		lw, err := startLocalWatch(ctx, o)
		if err != nil {
			return err
		}
		defer func() {
			if err := lw.stop(); err != nil {
				slog.Warn("watch", "err", err)
			}
		}()
		fetch = func() ([]report.BootView, []string, error) {
			return lw.mem.boots(ctx, time.Now(), progress.Limits{Quiet: o.stallQuiet, Floor: o.stallFloor})
		}
		if o.once {
			// Once: what the source holds now, read to its end.
			if err := lw.settle(ctx); err != nil {
				return err
			}
		}
	}
	drawn := 0                  // lines drawn last time (terminal)
	last := map[string]string{} // boot id → its state line printed last (pipe)
	for {
		views, ids, err := fetch()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now := time.Now().Format("15:04:05")
		if tty {
			width, _, _ := term.GetSize(int(os.Stdout.Fd()))
			var b strings.Builder
			if drawn > 0 {
				fmt.Fprintf(&b, "\x1b[%dA\x1b[J", drawn) // back to the first line, clear below
			}
			fmt.Fprintf(&b, "%s  %d boot(s) in progress\n", now, len(views))
			for _, v := range views {
				b.WriteString(report.BootLine(v, width) + "\n")
			}
			drawn = len(views) + 1
			if _, err := io.WriteString(out, b.String()); err != nil {
				return err
			}
		} else {
			seen := map[string]bool{}
			for i, v := range views {
				seen[ids[i]] = true
				state := fmt.Sprintf("%s %v", v.Phase, v.Stalled)
				if last[ids[i]] != state {
					last[ids[i]] = state
					fmt.Fprintf(out, "%s %s\n", now, report.BootLine(v, 0))
				}
			}
			for id := range last {
				if !seen[id] {
					delete(last, id)
					fmt.Fprintf(out, "%s %s no longer booting (ready, failed or stopped: see its attempt)\n", now, id)
				}
			}
		}
		if o.once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.interval):
		}
	}
}

// fetchBoots asks base for its boots in progress.
func fetchBoots(ctx context.Context, client *http.Client, base string) ([]report.BootView, []string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/boots", nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("watch %s: %w (is analyzer serve running there?)", base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("watch %s: GET /api/v1/boots answered %s", base, resp.Status)
	}
	var bj bootsJSON
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBootsBytes)).Decode(&bj); err != nil {
		return nil, nil, fmt.Errorf("watch %s: %w", base, err)
	}
	sec := func(f *float64) *time.Duration {
		if f == nil {
			return nil
		}
		d := time.Duration(*f * float64(time.Second))
		return &d
	}
	var views []report.BootView
	var ids []string
	for _, b := range bj.Boots {
		p := b.Progress
		if p == nil {
			continue
		}
		views = append(views, report.BootView{Host: b.Host, Unit: b.Unit, Phase: p.Phase,
			Elapsed: time.Duration(p.Elapsed * float64(time.Second)), InPhase: time.Duration(p.InPhase * float64(time.Second)),
			ETA50: sec(p.ETAP50), ETA90: sec(p.ETAP90), Basis: p.Basis, PhaseP50: sec(p.PhaseP50), PhaseP90: sec(p.PhaseP90),
			StallLimit: time.Duration(p.StallLimit * float64(time.Second)), Stalled: p.Stalled})
		ids = append(ids, b.ID)
	}
	return views, ids, nil
}
