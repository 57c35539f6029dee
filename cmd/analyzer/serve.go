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
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	db, err := store.Open(*dbPath)
	if err != nil {
		return err
	}
	defer db.Close()
	srv := &http.Server{Addr: *listen, Handler: web.New(db, web.Options{}), ReadHeaderTimeout: 10 * time.Second}
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
