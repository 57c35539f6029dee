package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/net/netutil"

	"github.com/llmfleet/analyzer/rules/suggest"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
)

// serveOpts are serve's flags.
type serveOpts struct {
	db, listen string
	webConfig  string
	http       *httpFlags
	live       *liveFlags
	journal    *journalFlags
}

func newServeCmd() *cobra.Command {
	o := &serveOpts{}
	c := &cobra.Command{
		Use:   "serve [flags]",
		Short: "web UI and JSON API over the database; follows the local journal, accepts Loki pushes",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runServe(c.Context(), o, c.Flags())
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.db, "db", defaultDB, "SQLite database file")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "HTTP listen address")
	fs.StringVar(&o.webConfig, "web.config.file", "",
		"TLS and basic-auth configuration (Prometheus' web config file: tls_server_config, basic_auth_users with bcrypt hashes) for every route")
	o.http = addHTTPFlags(fs)
	o.live = addLiveFlags(fs)
	o.journal = addJournalFlags(fs)
	completeValues(c, "journal-reader", "journalctl", "sd-journal")
	return c
}

// runServe is `analyzer serve`; fs tells which flags were given.
func runServe(ctx context.Context, o *serveOpts, fs *pflag.FlagSet) (err error) {
	o.live.warnUnused(fs)
	o.journal.warnUnused(fs)
	m := &serveMain{opts: o}
	defer func() { err = errors.Join(err, m.Close()) }()
	if err := m.Open(ctx, fs); err != nil {
		return stoppedWhileStarting(ctx, err)
	}
	return m.Run(ctx)
}

// serveMain is the serve process, in the shape of wtf's cmd/wtfd Main:
// Open starts the parts in order, Run serves until ctx ends, Close stops
// them in the reverse order, each once.
type serveMain struct {
	opts   *serveOpts
	wc     webConfig
	ln     net.Listener
	db     *store.DB
	lv     *live
	fol    *follower
	srv    *http.Server
	health func() []web.Check
}

// shutdownGrace is how long requests in flight get when serve stops: the
// unit allows 30 s (TimeoutStopSec), the pipelines' last flush the rest.
const shutdownGrace = 20 * time.Second

// Open checks the configuration, listens (a busy port fails the start
// before anything else runs), opens the database and starts the live
// pipeline and the journal follower. What it started, Close stops.
func (m *serveMain) Open(ctx context.Context, fs *pflag.FlagSet) error {
	o := m.opts
	var err error
	if m.wc, err = loadWebConfig(o.webConfig); err != nil {
		return err
	}
	if err := o.live.check(o.listen, m.wc.basicAuth); err != nil {
		return err
	}
	limitMemory()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	m.ln = netutil.LimitListener(ln, o.http.maxConns)
	announceDB(fs, o.db)
	if m.db, err = store.Open(o.db); err != nil {
		return err
	}
	if m.lv, err = startLive(ctx, m.db, o.live); err != nil {
		return err
	}
	if o.journal.wanted() {
		o.journal.stallQuiet, o.journal.stallFloor = o.live.stallQuiet, o.live.stallFloor
		if m.fol, err = startJournal(ctx, m.db, m.lv.rules.Current(), o.journal, m.lv.metrics, m.lv.findings()); err != nil {
			return err
		}
		m.lv.rules.Add(m.fol.pipeline)
	}
	m.lv.watchSIGHUP(ctx)
	m.health = healthChecks(ctx, m.db, o.db, m.fol)
	handler := web.New(m.db, web.Options{Routes: m.lv.routes, WarmLadders: true, LiveUpdate: true, Context: ctx, AllowedHosts: o.http.allowed(o.listen),
		Health: m.health, StallQuiet: o.live.stallQuiet, StallFloor: o.live.stallFloor, Suggester: &suggest.Suggester{DB: m.db, NotFound: store.ErrNotFound, Dir: o.live.rules,
			Reload: func() error { return m.lv.rules.Update("a rule written from an unknown failure") }}})
	m.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: o.http.readTimeout,
		WriteTimeout: o.http.writeTimeout, IdleTimeout: o.http.idleTimeout, MaxHeaderBytes: 64 << 10}
	return nil
}

// Run serves HTTP on the listener until ctx ends (then it shuts the server
// down within shutdownGrace) or the server fails.
func (m *serveMain) Run(ctx context.Context) error {
	o := m.opts
	errc := make(chan error, 1)
	wc, srv, ln := m.wc, m.srv, m.ln // Close may clear the fields while the server still returns
	go func() { errc <- wc.serve(srv, ln) }()
	slog.Info("serving", "db", o.db, "url", m.wc.scheme()+"://"+o.listen)
	if m.wc.basicAuth {
		slog.Info("every route needs basic auth", "web.config.file", o.webConfig)
	}
	notifySystemd(ctx, m.health)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := m.srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close stops what Open started, newest first: the follower (its last
// findings still reach the pusher), the live pipeline and the pusher, the
// database, the listener. It logs each failure and returns them joined.
func (m *serveMain) Close() error {
	var errs []error
	if m.fol != nil {
		if err := m.fol.stop(); err != nil {
			slog.Error("journal follower", "err", err)
			errs = append(errs, err)
		}
		m.fol = nil
	}
	if m.lv != nil {
		if err := m.lv.close(); err != nil {
			slog.Error("live pipeline", "err", err)
			errs = append(errs, err)
		}
		m.lv = nil
	}
	if m.db != nil {
		errs = append(errs, m.db.Close())
		m.db = nil
	}
	if m.ln != nil {
		if err := m.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
		m.ln = nil
	}
	return errors.Join(errs...)
}

// stoppedWhileStarting is err, or nil when the stop signal that canceled ctx
// is what made the start fail: `systemctl stop` during start-up is a clean
// stop, not a failure (exit status 0).
func stoppedWhileStarting(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
