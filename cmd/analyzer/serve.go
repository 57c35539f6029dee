package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
)

func cmdServe(ctx context.Context, args []string) error {
	fs := newFlags("serve")
	dbPath := fs.String("db", defaultDB, "SQLite database file")
	listen := fs.String("listen", "127.0.0.1:8080", "HTTP listen address")
	lf := addLiveFlags(fs)
	jf := addJournalFlags(fs)
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if err := lf.check(*listen); err != nil {
		return err
	}
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
	if jf.wanted() {
		fol, err := startJournal(ctx, db, lv.rules.current(), jf, lv.metrics, lv.findings())
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
	srv := &http.Server{Addr: *listen, Handler: web.New(db, web.Options{Routes: lv.routes}), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Fprintf(os.Stderr, "analyzer: serving %s on http://%s\n", *dbPath, *listen)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
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
