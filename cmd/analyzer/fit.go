package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ladder"
	"github.com/llmfleet/analyzer/progress"
	"github.com/llmfleet/analyzer/report"
	"github.com/llmfleet/analyzer/store"
)

// fitOpts are fit's flags.
type fitOpts struct {
	db, target, host, format, rules, granularity string
	dtype, kvBytes                               string
	seqs, mml                                    int64
	util                                         float64
	gap                                          time.Duration
}

func newFitCmd() *cobra.Command {
	o := &fitOpts{}
	c := &cobra.Command{
		Use:   "fit --target NAME --max-num-seqs N --max-model-len N [flags] [FILE...]",
		Short: "predict whether a shape boots and survives, from the target's boot ladder",
		Long: `fit predicts, before anyone boots it, whether a shape boots and survives
on a target: from the rungs of the target's boot ladder (the newest one, in
the database or in FILEs analyzed directly) it builds a capacity model (KV
bytes per token per dtype, the pool each rung got, what its OOM lines asked
for and had free, and which rungs are no larger or no smaller than the
shape) and says boots, fails or unknown, with the rung or the arithmetic
that decides. It also prints the largest shape predicted to boot and to
survive at that KV dtype and memory setting, as the engine's own flags.

Without --kv-cache-memory-bytes or --gpu-memory-utilization the KV pool is
the one that holds the contract (max_num_seqs × max_model_len tokens). The
other settings are those of the ladder's latest rung.`,
		ValidArgsFunction: completeFiles,
		RunE: func(c *cobra.Command, args []string) error {
			return runFit(c.Context(), o, c.Flags(), args, stdout)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.target, "target", "", "the ladder's target (served_model_name or unit family); required")
	fs.StringVar(&o.host, "host", "", "the ladder's host (needed when the target ran on several)")
	fs.Int64Var(&o.seqs, "max-num-seqs", 0, "proposed max_num_seqs (sequences); required")
	fs.Int64Var(&o.mml, "max-model-len", 0, "proposed max_model_len (tokens); required")
	fs.StringVar(&o.dtype, "kv-cache-dtype", "", "proposed KV cache dtype (default: the latest rung's)")
	fs.StringVar(&o.kvBytes, "kv-cache-memory-bytes", "", "pinned KV pool, bytes per rank (or a size: 9.68GiB)")
	fs.Float64Var(&o.util, "gpu-memory-utilization", 0, "fraction of device memory (0..1]; the pool is what rungs at it got")
	fs.StringVar(&o.db, "db", defaultDB, "SQLite database file (when no FILE is given)")
	fs.StringVarP(&o.format, "format", "o", "table", "output format: table or json")
	fs.StringVar(&o.rules, "rules", "", "rule directory for FILEs (default: the built-in rules)")
	fs.DurationVar(&o.gap, "gap", ladder.DefaultGap, "time without attempts that starts a new ladder")
	fs.StringVar(&o.granularity, "granularity", "", "block granularity in tokens: N for every engine, or ENGINE=N,... (default 4096)")
	completeValues(c, "format", "table", "json")
	return c
}

// fitJSON is `analyzer fit -o json`; the same document as GET
// /api/v1/ladders/{id}/predict.
type fitJSON struct {
	Ladder     string            `json:"ladder"`
	Host       string            `json:"host"`
	Target     string            `json:"target"`
	Prediction ladder.Prediction `json:"prediction"`
	Largest    ladder.Largest    `json:"largest"`
	// ReadyTime is the expected time to ready of the proposed shape, from
	// the target's earlier boots on the host (all its ladders).
	ReadyTime progress.ReadyTimeJSON `json:"ready_time"`
}

// runFit is `analyzer fit`: the capacity model of the target's newest
// ladder asked about one shape; fs tells which flags were given.
func runFit(ctx context.Context, o *fitOpts, fs *pflag.FlagSet, files []string, w io.Writer) error {
	opt := ladder.Options{Gap: o.gap}
	if err := parseGranularity(o.granularity, &opt); err != nil {
		return usageError{msg: err.Error()}
	}
	switch {
	case o.format != "table" && o.format != "json":
		return usageError{msg: fmt.Sprintf("--format %q: want table or json", o.format)}
	case o.target == "":
		return usageError{msg: "--target is required"}
	case o.seqs <= 0 || o.mml <= 0:
		return usageError{msg: "--max-num-seqs and --max-model-len are required, positive integers"}
	case fs.Changed("kv-cache-memory-bytes") && fs.Changed("gpu-memory-utilization"):
		return usageError{msg: "give --kv-cache-memory-bytes or --gpu-memory-utilization, not both"}
	case fs.Changed("gpu-memory-utilization") && domain.CheckShapeValue(domain.ShapeGPUMemoryUtilization, o.util) != nil:
		// NaN compares false with both bounds: the shape check names it.
		return usageError{msg: fmt.Sprintf("--gpu-memory-utilization %g: want a fraction in (0, 1]", o.util)}
	}
	for _, v := range []struct {
		flag, key string
		n         int64
	}{{"--max-num-seqs", domain.ShapeMaxNumSeqs, o.seqs}, {"--max-model-len", domain.ShapeMaxModelLen, o.mml}} {
		if err := domain.CheckShapeValue(v.key, float64(v.n)); err != nil {
			return usageError{msg: v.flag + ": " + err.Error()}
		}
	}
	var mem ladder.Memory
	if o.kvBytes != "" {
		b, ok := domain.ParseByteCount(o.kvBytes)
		if !ok || b <= 0 {
			return usageError{msg: fmt.Sprintf("--kv-cache-memory-bytes %q: want a positive number of bytes or a size such as 9.68GiB", o.kvBytes)}
		}
		if err := domain.CheckShapeValue(domain.ShapeKVCacheMemoryBytes, float64(b)); err != nil {
			return usageError{msg: "--kv-cache-memory-bytes: " + err.Error()}
		}
		mem.KVCacheMemoryBytes = b
	}
	mem.GPUMemoryUtilization = o.util
	attempts, err := fitAttempts(ctx, o, fs, files)
	if err != nil {
		return err
	}
	var match []ladder.Ladder
	hosts := map[string]bool{}
	all := ladder.Build(attempts, opt)
	for _, l := range all {
		if l.Target == o.target && (o.host == "" || l.Host == o.host) {
			match = append(match, l)
			hosts[l.Host] = true
		}
	}
	if len(match) == 0 {
		return noLadderError(o.target, o.host, all)
	}
	if len(hosts) > 1 {
		var hs []string
		for h := range hosts {
			hs = append(hs, h)
		}
		sort.Strings(hs)
		return usageError{msg: fmt.Sprintf("target %q has ladders on several hosts (%s): choose one with --host", o.target, strings.Join(hs, ", "))}
	}
	// Build returns the newest ladder first: the current campaign.
	l := &match[0]
	if len(match) > 1 {
		slog.Info("several ladders of the target; fitting the newest", "ladders", len(match), "target", l.Target, "host", l.Host,
			"ladder", l.ID, "started", l.StartedAt.Format(time.RFC3339))
	}
	var dts []string
	for _, r := range l.Rungs {
		if dt := r.Shape.String(domain.ShapeKVCacheDtype); dt != "" && !slices.Contains(dts, dt) {
			dts = append(dts, dt)
		}
	}
	sort.Strings(dts)
	if o.dtype != "" && !slices.Contains(dts, o.dtype) {
		return usageError{msg: fmt.Sprintf("--kv-cache-dtype %q is not one the ladder ran (%s): the model knows no bytes per token for it", o.dtype, strings.Join(dts, ", "))}
	}
	m := ladder.NewModel(l)
	pr := m.WhatIf(o.seqs, o.mml, o.dtype, mem)
	lg, err := m.LargestContext(ctx, pr.KVDtype, mem)
	if err != nil {
		return err // interrupted
	}
	doc := fitJSON{Ladder: l.ID, Host: l.Host, Target: l.Target, Prediction: pr, Largest: lg,
		ReadyTime: progress.TimeToReady(rungAttempts(attempts, match), progress.ProposedShape(o.seqs, o.mml, pr.KVDtype, l.Rungs[len(l.Rungs)-1].Shape)).JSON()}
	if o.format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(doc)
	}
	st, _ := outputStyle("never") // only its width: fit prints no colour
	fitTable(w, l, doc, st)
	return nil
}

// rungAttempts are the attempts of the rungs of ls.
func rungAttempts(as []*domain.Attempt, ls []ladder.Ladder) []*domain.Attempt {
	ids := map[string]bool{}
	for _, l := range ls {
		for _, r := range l.Rungs {
			ids[r.AttemptID] = true
		}
	}
	var out []*domain.Attempt
	for _, a := range as {
		if ids[a.ID] {
			out = append(out, a)
		}
	}
	return out
}

// fitAttempts reads the attempts: FILEs analyzed directly, else the
// database.
func fitAttempts(ctx context.Context, o *fitOpts, fs *pflag.FlagSet, files []string) ([]*domain.Attempt, error) {
	if len(files) > 0 {
		noEffect(fs, "FILEs are analyzed instead of a database", "db")
		return analyzeFiles(ctx, "fit", loadRules(o.rules), files, nil)
	}
	noEffect(fs, "the attempts come from the database, already judged (give FILEs to judge them with other rules)", "rules")
	if _, err := os.Stat(o.db); err != nil {
		return nil, fmt.Errorf("database %s: %w (record attempts with `analyzer replay`, or give FILEs)", o.db, err)
	}
	announceDB(fs, o.db)
	db, err := store.Open(o.db)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return db.ListAttempts(ctx, domain.AttemptFilter{Brief: true})
}

// fitTable prints a prediction for a terminal, each row's text folded at
// st's width under its own column.
func fitTable(w io.Writer, l *ladder.Ladder, d fitJSON, st report.Style) {
	p := d.Prediction
	fmt.Fprintf(w, "fit %s on %s (%s, ladder %s, %d rungs)\n", l.Target, l.Host, l.Engine, l.ID, len(l.Rungs))
	mem := p.Memory
	if mem == "" {
		mem = "KV pool sized to hold the contract"
	}
	row := func(k, v string) { fmt.Fprintf(w, "%-9s %s\n", k, st.Fold(v, "          ")) }
	row("shape", fmt.Sprintf("%d × %d %s, %s", p.MaxNumSeqs, p.MaxModelLen, or(p.KVDtype, "(no dtype)"), mem))
	pool := "unknown"
	if p.PoolTokens != nil {
		pool = strconv.FormatInt(*p.PoolTokens, 10) + " tokens"
	}
	if p.PoolBytes != nil {
		pool += fmt.Sprintf(" = %.2f GiB", float64(*p.PoolBytes)/(1<<30))
	}
	if p.KVBytesPerToken != nil {
		pool += fmt.Sprintf(" at %.0f B/token", *p.KVBytesPerToken)
	}
	row("contract", fmt.Sprintf("%d tokens; pool %s", p.TokensNeeded, pool))
	row("boot", strings.ToUpper(p.Boot.Outcome)+"  "+p.Boot.Reason)
	row("survive", strings.ToUpper(p.Survive.Outcome)+"  "+p.Survive.Reason)
	row("flags", p.Flags)
	row("time", d.ReadyTime.Text)
	for i, f := range []*ladder.Fit{d.Largest.Boot, d.Largest.Survive} {
		k, what := "largest", "to boot:   "
		if i == 1 {
			k, what = "", "to survive:"
		}
		if f == nil {
			row(k, what+" none")
			continue
		}
		row(k, fmt.Sprintf("%s %d = %d × %d  %s", what, f.ContractTokens, f.MaxNumSeqs, f.MaxModelLen, f.Flags))
	}
	for _, n := range p.Notes {
		row("note", n)
	}
	for _, r := range d.Largest.OutOfRange {
		row("left out", r)
	}
}
