package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/pipeline"
	"github.com/llmfleet/analyzer/progress"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
	"github.com/llmfleet/analyzer/web/httpauth"
	"github.com/llmfleet/analyzer/web/rulesapi"
)

// lokiFlags are the flags of the findings pusher (serve and replay).
type lokiFlags struct {
	url, user, password, token, tenant string
	structuredMetadata                 bool
	maxAge                             time.Duration
}

func addLokiFlags(fs *pflag.FlagSet) *lokiFlags {
	lf := &lokiFlags{}
	fs.StringVar(&lf.url, "loki-url", "", "push every finding to this Loki (http://HOST:3100, or the full /loki/api/v1/push URL)")
	fs.StringVar(&lf.user, "loki-user", "", "basic-auth user for --loki-url")
	fs.StringVar(&lf.password, "loki-password", os.Getenv("ANALYZER_LOKI_PASSWORD"), "basic-auth password for --loki-url (default $ANALYZER_LOKI_PASSWORD)")
	fs.StringVar(&lf.token, "loki-token", os.Getenv("ANALYZER_LOKI_TOKEN"), "bearer token for --loki-url (default $ANALYZER_LOKI_TOKEN)")
	fs.StringVar(&lf.tenant, "loki-tenant", "", "tenant sent as X-Scope-OrgID to --loki-url")
	fs.BoolVar(&lf.structuredMetadata, "loki-structured-metadata", false,
		"send attempt id, invocation id, rule and shape as structured metadata instead of in the line (Loki 3, schema v13)")
	fs.DurationVar(&lf.maxAge, "loki-max-age", 167*time.Hour,
		"findings older than this are not pushed but counted as too_old: Loki's reject_old_samples_max_age (168h by default) less a margin; -1s pushes everything")
	return lf
}

// warnUnused warns about Loki flags that change nothing without --loki-url
// (--loki-user, --loki-token and --loki-tenant are refused instead).
func (lf *lokiFlags) warnUnused(fs *pflag.FlagSet) {
	if lf.url == "" {
		noEffect(fs, "no --loki-url is set", "loki-password", "loki-structured-metadata", "loki-max-age")
	}
}

// pusher returns the findings pusher, nil without --loki-url.
func (lf *lokiFlags) pusher(m *metrics.Metrics) (*loki.Pusher, error) {
	if lf.url == "" {
		if lf.user != "" || lf.token != "" || lf.tenant != "" {
			return nil, usageError{msg: "--loki-user, --loki-token and --loki-tenant need --loki-url"}
		}
		return nil, nil
	}
	return loki.NewPusher(loki.PusherConfig{URL: lf.url, Username: lf.user, Password: lf.password,
		BearerToken: lf.token, TenantID: lf.tenant, StructuredMetadata: lf.structuredMetadata, MaxAge: lf.maxAge, Metrics: m})
}

// liveFlags are serve's flags of the live pipeline.
type liveFlags struct {
	rules        string
	externalURL  string
	loki         *lokiFlags
	push         bool
	pushToken    string
	pushMaxBytes int64
	stallQuiet   time.Duration
	stallFloor   time.Duration
}

func addLiveFlags(fs *pflag.FlagSet) *liveFlags {
	lf := &liveFlags{loki: addLokiFlags(fs)}
	fs.StringVar(&lf.rules, "rules", "", "rule directory for pushed journals (default: the built-in rules)")
	fs.StringVar(&lf.externalURL, "external-url", "",
		"URL the UI is reached at from outside (like Prometheus' --web.external-url), e.g. https://analyzer.example: alerts link attempts under it")
	fs.BoolVar(&lf.push, "push", true, "accept Loki pushes (Alloy loki.write, Promtail) on POST "+loki.PushPath)
	fs.StringVar(&lf.pushToken, "push-token", os.Getenv("ANALYZER_PUSH_TOKEN"),
		"bearer token pushes must send (default $ANALYZER_PUSH_TOKEN); required when --listen is not loopback")
	fs.Int64Var(&lf.pushMaxBytes, "push-max-bytes", loki.DefaultMaxBytes, "largest push body, as received and decompressed (413 above)")
	fs.DurationVar(&lf.stallQuiet, "stall-quiet", progress.DefaultQuiet,
		"a boot whose phase the unit's earlier boots do not tell has stalled once it printed nothing for this long (analyzer_boot_stalled)")
	fs.DurationVar(&lf.stallFloor, "stall-floor", progress.StallMargin,
		"a boot has stalled in a phase after max(3 × the phase's p90 in the unit's earlier boots, p90 + this) (analyzer_boot_stalled)")
	return lf
}

// warnUnused warns about live flags that change nothing. --push-token
// still guards POST /-/reload with --push=false, so it is not one.
func (lf *liveFlags) warnUnused(fs *pflag.FlagSet) {
	lf.loki.warnUnused(fs)
	if !lf.push {
		noEffect(fs, "--push=false turns the push endpoint off", "push-max-bytes")
	}
}

// check refuses an open push endpoint on a non-loopback address; basic
// auth from --web.config.file closes it too, and then excludes a push
// token (a collector sends one Authorization header).
func (lf *liveFlags) check(listen string, basicAuth bool) error {
	if lf.pushMaxBytes <= 0 {
		return usageError{msg: "--push-max-bytes must be positive"}
	}
	if basicAuth && lf.pushToken != "" {
		return usageError{msg: "--web.config.file sets basic_auth_users: pushes then authenticate with basic auth, " +
			"and cannot also send --push-token's bearer token; leave --push-token (and $ANALYZER_PUSH_TOKEN) unset"}
	}
	if lf.push && lf.pushToken == "" && !basicAuth && !httpauth.Loopback(listen) {
		return fmt.Errorf("--listen %s is not a loopback address: set --push-token (or $ANALYZER_PUSH_TOKEN), or basic_auth_users "+
			"in --web.config.file, so that only your collectors can push journals, or turn the endpoint off with --push=false", listen)
	}
	return nil
}

// live is the running live pipeline of serve.
type live struct {
	routes   []web.Route
	pipeline *pipeline.Live
	pusher   *loki.Pusher
	cancel   context.CancelFunc
	metrics  *metrics.Metrics
	// rules reloads the rule set into every pipeline (SIGHUP, POST /-/reload).
	rules *rules.Manager
}

// watchSIGHUP reloads the rules on every SIGHUP until ctx ends.
func (l *live) watchSIGHUP(ctx context.Context) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				_ = l.rules.Update("SIGHUP")
			}
		}
	}()
}

// findings is where findings of other pipelines go (the pusher, or none).
func (l *live) findings() pipeline.FindingSink {
	if l.pusher == nil {
		return nil
	}
	return l.pusher
}

// startLive builds /metrics, the pipeline, the push receiver and the
// findings pusher, and starts their goroutines.
func startLive(ctx context.Context, db *store.DB, lf *liveFlags) (*live, error) {
	rl, err := rules.NewManager(lf.rules, nil)
	if err != nil {
		return nil, err
	}
	set := rl.Current()
	ext, err := externalURL(lf.externalURL)
	if err != nil {
		return nil, usageError{msg: err.Error()}
	}
	m := metrics.New(metrics.Options{Store: db, Version: versionLabel(), ExternalURL: ext, Progress: db, StallQuiet: lf.stallQuiet, StallFloor: lf.stallFloor})
	rl.Observe(func(st rules.ReloadStatus, n int) { m.RulesReloaded(st.OK, st.Time, n) })
	pusher, err := lf.loki.pusher(m)
	if err != nil {
		return nil, err
	}
	// SIGTERM (ctx) abandons a save in progress; Close saves what it can
	// within a second.
	popts := pipeline.Options{Metrics: m, Context: ctx, History: db, StallQuiet: lf.stallQuiet, StallFloor: lf.stallFloor}
	if pusher != nil {
		popts.Findings = pusher
		pusher.Start()
		slog.Info("pushing findings to Loki", "url", pusher.URL())
	}
	p := pipeline.New(db, set, popts)
	p.Start()
	rl.Add(p)
	rl.Add(&reconsiderer{ctx: ctx, db: db})
	ctx, cancel := context.WithCancel(ctx)
	l := &live{pipeline: p, pusher: pusher, cancel: cancel, metrics: m, rules: rl,
		routes: []web.Route{{Method: http.MethodGet, Path: "/metrics", Handler: m.Handler()},
			{Method: http.MethodGet, Path: rulesapi.RulesPath, Handler: rulesapi.Status(rl)},
			{Method: http.MethodPost, Path: rulesapi.ReloadPath, Handler: rulesapi.Reload(rl, lf.pushToken)}}}
	if lf.push {
		rv := loki.NewReceiver(loki.ReceiverOptions{Sink: p, Token: lf.pushToken, MaxBytes: lf.pushMaxBytes, Metrics: m})
		go rv.Run(ctx)
		l.routes = append(l.routes, web.Route{Method: http.MethodPost, Path: loki.PushPath, Handler: rv})
	}
	return l, nil
}

// close saves what the pipeline holds and sends the queued findings (for
// at most 10 s).
func (l *live) close() error {
	l.cancel()
	err := l.pipeline.Close()
	if l.pusher != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if perr := l.pusher.Close(ctx); perr != nil && !errors.Is(perr, context.DeadlineExceeded) {
			err = errors.Join(err, perr)
		}
	}
	return err
}

// findingPush sends the findings of replayed attempts to Loki as they are
// offered; close waits (up to a minute) until they are delivered or dropped.
type findingPush struct {
	p *loki.Pusher
	m *metrics.Metrics
	n int
}

// startFindingPush returns nil when no --loki-url is set.
func startFindingPush(lf *lokiFlags) (*findingPush, error) {
	if lf.url == "" {
		// No push: only the flags' checks. Building the metrics registry
		// for nothing cost a replay ~0.4 ms of its start.
		_, err := lf.pusher(nil)
		return nil, err
	}
	m := metrics.New(metrics.Options{NoProcessMetrics: true, Version: versionLabel()})
	p, err := lf.pusher(m)
	if err != nil || p == nil {
		return nil, err
	}
	p.Start()
	return &findingPush{p: p, m: m}, nil
}

// Offer queues a finding for Loki (pipeline.FindingSink).
func (fp *findingPush) Offer(a *domain.Attempt, f domain.Finding) bool {
	if !fp.p.Offer(a, f) {
		return false
	}
	fp.n++
	return true
}

// close waits for delivery and reports it (nil-safe).
func (fp *findingPush) close(ctx context.Context) error {
	if fp == nil {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cerr := fp.p.Close(wait)
	delivered, failed, tooOld := fp.m.LokiTotals()
	fmt.Fprintf(stdout, "pushed %d of %d findings to %s (%d failed", delivered, fp.n-int(tooOld), fp.p.URL(), failed)
	if tooOld > 0 {
		fmt.Fprintf(stdout, "; %d older than --loki-max-age %v not sent", tooOld, fp.p.MaxAge())
	}
	fmt.Fprintln(stdout, ")")
	if failed > 0 {
		return fmt.Errorf("%d findings were not pushed to Loki", failed)
	}
	return cerr
}

// externalURL checks --external-url: an absolute http or https URL, given
// back without its trailing slash ("" stays "").
func externalURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--external-url %q: want an absolute http(s) URL such as https://analyzer.example/analyzer", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// reconsiderer re-decides the stored unknown failures with the rules each
// reload adds (pipeline.ReconsiderStored), in the background: a rule
// written for an unknown failure group (rules suggest) names the attempts
// already stored, and the UI shows them named, without a restart. The set
// in use at start adds nothing.
type reconsiderer struct {
	ctx context.Context
	db  *store.DB

	mu   sync.Mutex // guards prev (SetRules is called in reload order)
	prev *rules.Set
	run  sync.Mutex // one reconsideration at a time
}

func (r *reconsiderer) SetRules(set *rules.Set) error {
	r.mu.Lock()
	prev := r.prev
	r.prev = set
	r.mu.Unlock()
	if prev == nil {
		return nil
	}
	go func() {
		r.run.Lock()
		defer r.run.Unlock()
		changed, read, err := pipeline.ReconsiderStored(r.ctx, r.db, set, pipeline.NewRules(prev), true)
		switch {
		case err != nil:
			slog.Error("stored unknown failures were not re-decided with the reloaded rules", "err", err)
		case len(changed) > 0:
			slog.Info("the reloaded rules name stored unknown failures", "named", len(changed), "read", read)
		}
	}()
	return nil
}
