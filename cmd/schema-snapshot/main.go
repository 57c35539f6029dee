// Command schema-snapshot prints migrations/schema.snapshot: the schema
// every migration file leaves, applied in order to an empty in-memory
// SQLite database. make schema writes its output; a test holds the file
// equal to what the files leave.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"

	_ "github.com/mattn/go-sqlite3"

	"github.com/llmfleet/analyzer/migrations"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "schema-snapshot:", err)
		os.Exit(1)
	}
}

func run() error {
	ms, err := migrations.List()
	if err != nil {
		return err
	}
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	text, err := migrations.WriteSnapshot(context.Background(), db, ms)
	if err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(text)
	return err
}
