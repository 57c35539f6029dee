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
func runServe(ctx context.Context, o *serveOpts, fs *pflag.FlagSet) error {
	o.live.warnUnused(fs)
	o.journal.warnUnused(fs)
	wc, err := loadWebConfig(o.webConfig)
	if err != nil {
		return err
	}
	if err := o.live.check(o.listen, wc.basicAuth); err != nil {
		return err
	}
	limitMemory()
	// Listen first: a busy port fails the start before anything else runs.
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	ln = netutil.LimitListener(ln, o.http.maxConns)
	defer ln.Close()
	announceDB(fs, o.db)
	db, err := store.Open(o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	lv, err := startLive(ctx, db, o.live)
	if err != nil {
		return stoppedWhileStarting(ctx, err)
	}
	defer func() {
		if err := lv.close(); err != nil {
			slog.Error("live pipeline", "err", err)
		}
	}()
	var fol *follower
	if o.journal.wanted() {
		fol, err = startJournal(ctx, db, lv.rules.Current(), o.journal, lv.metrics, lv.findings())
		if err != nil {
			return stoppedWhileStarting(ctx, err)
		}
		lv.rules.Add(fol.pipeline)
		// Runs before lv.close: the follower's last findings still reach the pusher.
		defer func() {
			if err := fol.stop(); err != nil {
				slog.Error("journal follower", "err", err)
			}
		}()
	}
	lv.watchSIGHUP(ctx)
	health := healthChecks(db, o.db, fol)
	handler := web.New(db, web.Options{Routes: lv.routes, WarmLadders: true, Context: ctx, AllowedHosts: o.http.allowed(o.listen),
		Health: health})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: o.http.readTimeout,
		WriteTimeout: o.http.writeTimeout, IdleTimeout: o.http.idleTimeout, MaxHeaderBytes: 64 << 10}
	errc := make(chan error, 1)
	go func() { errc <- wc.serve(srv, ln) }()
	slog.Info("serving", "db", o.db, "url", wc.scheme()+"://"+o.listen)
	if wc.basicAuth {
		slog.Info("every route needs basic auth", "web.config.file", o.webConfig)
	}
	notifySystemd(ctx, health)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// The unit allows 30 s to stop; requests in flight get most of it.
	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
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
