package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
	"golang.org/x/net/netutil"
)

func cmdServe(ctx context.Context, args []string) error {
	fs := newFlags("serve")
	dbPath := fs.String("db", defaultDB, "SQLite database file")
	listen := fs.String("listen", "127.0.0.1:8080", "HTTP listen address")
	hf := addHTTPFlags(fs)
	lf := addLiveFlags(fs)
	jf := addJournalFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return usageError{err.Error()}
	}
	if err := lf.check(*listen); err != nil {
		return err
	}
	limitMemory()
	// Listen first: a busy port fails the start before anything else runs.
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	ln = netutil.LimitListener(ln, hf.maxConns)
	defer ln.Close()
	announceDB(fs, *dbPath)
	db, err := store.Open(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	lv, err := startLive(ctx, db, lf)
	if err != nil {
		return stoppedWhileStarting(ctx, err)
	}
	defer func() {
		if err := lv.close(); err != nil {
			fmt.Fprintln(os.Stderr, "analyzer: live pipeline:", err)
		}
	}()
	var fol *follower
	if jf.wanted() {
		fol, err = startJournal(ctx, db, lv.rules.current(), jf, lv.metrics, lv.findings())
		if err != nil {
			return stoppedWhileStarting(ctx, err)
		}
		lv.rules.add(fol.pipeline)
		// Runs before lv.close: the follower's last findings still reach the pusher.
		defer func() {
			if err := fol.stop(); err != nil {
				fmt.Fprintln(os.Stderr, "analyzer: journal follower:", err)
			}
		}()
	}
	lv.rules.watchSIGHUP(ctx)
	health := healthChecks(db, *dbPath, fol)
	handler := web.New(db, web.Options{Routes: lv.routes, WarmLadders: true, AllowedHosts: hf.allowed(*listen),
		Health: health})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: hf.readTimeout,
		WriteTimeout: hf.writeTimeout, IdleTimeout: hf.idleTimeout, MaxHeaderBytes: 64 << 10}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "analyzer: serving %s on http://%s\n", *dbPath, *listen)
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
