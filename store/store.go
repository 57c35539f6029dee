// Package store keeps boot attempts, their findings and evidence, and the
// ingest positions in a SQLite database (mattn/go-sqlite3, WAL mode). The
// schema lives in package migrations and is applied by Open.
//
// One process writes (the ingester, through SaveAttempts); any number of
// readers (the web UI, the JSON API) may run at the same time: WAL lets
// readers see the last committed state while a batch is being written.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/migrations"
	sqlite3 "github.com/mattn/go-sqlite3"
)

// ErrNotFound is returned by GetAttempt for an unknown attempt id.
var ErrNotFound = domain.ErrNotFound

// DB is an open analyzer database. It is safe for concurrent use.
type DB struct {
	db *sql.DB

	mu         sync.Mutex
	lastUpdate int64 // updated_at of the last save (µs)

	// Version's connection, the data_version it last read and the
	// version it counted then; guarded by verMu.
	verMu   sync.Mutex
	verConn *sql.Conn
	verData int64
	verLast string

	// dicts are the log dictionaries this process has read or written
	// (logdict.go).
	dicts logDicts
}

// chunkReader reads log chunks in tx.
func (d *DB) chunkReader(ctx context.Context, tx *sql.Tx) *chunkReader {
	return &chunkReader{ctx: ctx, q: tx, dicts: &d.dicts}
}

// dsnParams: WAL so the UI can read while ingest writes; a busy timeout so
// a second writer (another analyzer run) waits up to 5 s for the lock
// instead of failing at once; foreign keys so findings and evidence rows
// never outlive their attempt.
const dsnParams = "_journal_mode=WAL&_busy_timeout=5000&_foreign_keys=on"

// driverName is mattn/go-sqlite3's driver with every connection's
// temp_store set to MEMORY. SQLite then keeps a statement journal in
// memory instead of spilling it to a file in /var/tmp past 64 KiB: an
// upsert or a multi-row delete inside a save's transaction copies the
// 16 KB pages it changes there first (SaveAttempts runs several per
// attempt). A night-ladder replay wrote 33k such pages (540 MB) for a
// 21 MB database; the journal holds one statement's pages and is emptied
// when the statement ends. The analyzer creates no TEMP tables.
//
// Every connection's page cache may also grow to cacheKiB instead of
// SQLite's default 2,000 KiB (125 of our 16 KB pages). Each saved attempt
// inserts into seven b-trees keyed by a hash (the attempt's ID, its
// invocation and container IDs, the rows of its findings, timeline and
// log), so a save's leaf pages are spread over the whole index: past some
// 10,000 attempts, 125 pages no longer held one transaction's, and SQLite
// read and spilled pages it had just written. With 8 MiB, a replay of a
// 1M-line night journal (18,400 attempts) takes 5-8 % less time for 5 MiB
// more peak memory; at 800 attempts it makes no difference. A cache holds
// only pages its connection has read or written: one that serves a page
// request, which reads a few, stays small.
const driverName = "sqlite3_analyzer"

// cacheKiB is the size of each connection's page cache (PRAGMA
// cache_size, negative: in KiB).
const cacheKiB = 8192

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(fmt.Sprintf("PRAGMA temp_store = MEMORY; PRAGMA cache_size = -%d", cacheKiB), nil)
		return err
	}})
}

// Open opens (creating if needed) the SQLite database at path and applies
// the migrations it has not applied yet, in version order, in one
// transaction (a new database gets their schema.snapshot). The error names
// the migration file that failed. path is a file path; it must not contain
// '?'.
func Open(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: empty database path")
	}
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("store: database path %q must not contain '?'", path)
	}
	ctx := context.Background()
	if err := createWithPageSize(ctx, path); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", path, err)
	}
	sqlDB, err := sql.Open(driverName, path+"?"+dsnParams)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	d := &DB{db: sqlDB}
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := d.migrate(ctx); err != nil {
		sqlDB.Close()
		return nil, err
	}
	return d, nil
}

// pageSize is the page size of a database Open creates. An attempt's log
// chunk is 2-4 KB: in 4 KB pages one fitted per page, a third of the
// table unused (issue 27); 16 KB pages hold several.
const pageSize = 16384

// createWithPageSize creates the database at path with pageSize pages
// unless it exists and is not empty. The page size is fixed when the
// file is first written, and the DSN's journal_mode=WAL writes it with
// the default size: it is set on a connection of its own first. A
// database created before keeps its page size (a VACUUM outside WAL mode
// would change it).
func createWithPageSize(ctx context.Context, path string) error {
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return nil
	}
	db, err := sql.Open(driverName, fmt.Sprintf("%s?_busy_timeout=%d", path, busyTimeout.Milliseconds()))
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Another process creating it at the same moment: whichever writes
	// first sets the size, the other's pragma is then a no-op.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", pageSize)); err != nil {
		return err
	}
	// The switch to WAL fails at once, without the busy timeout, while
	// the other process switches: it is tried again for as long.
	deadline := time.Now().Add(busyTimeout)
	for {
		_, err = conn.ExecContext(ctx, "PRAGMA journal_mode = WAL")
		var se sqlite3.Error
		if !errors.As(err, &se) || se.Code != sqlite3.ErrBusy || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// busyTimeout is how long a connection waits for another's lock
// (dsnParams' _busy_timeout).
const busyTimeout = 5 * time.Second

// Close closes the database. Pending transactions are rolled back.
func (d *DB) Close() error {
	d.verMu.Lock()
	d.dropVersionConn()
	d.verMu.Unlock()
	return d.db.Close()
}

// Checkpoint copies what the write-ahead log holds into the database file
// as far as it can without waiting for readers or writers (SQLite's
// PRAGMA wal_checkpoint(PASSIVE)), on a connection of the pool other than
// the one a save's transaction holds: it may run while another goroutine
// saves. Close checkpoints whatever is left.
func (d *DB) Checkpoint(ctx context.Context) error {
	_, err := d.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	return err
}

// Ping checks the database answers a real read (for readiness checks): the
// first page of the attempt list, children included, as the UI's first page
// reads it. An open connection alone says nothing of a file whose pages are
// garbage.
func (d *DB) Ping(ctx context.Context) error {
	if _, err := d.PageAttempts(ctx, Filter{Limit: 50}); err != nil {
		return fmt.Errorf("store: reading the newest attempts: %w", err)
	}
	return nil
}

// QuickCheck runs SQLite's PRAGMA quick_check (the b-trees, pages and
// records of the whole file, without checking indexes against tables): nil
// when it says "ok", else an error with its first problems. It reads the
// whole database: seconds for a large one.
func (d *DB) QuickCheck(ctx context.Context) error {
	rows, err := d.db.QueryContext(ctx, `PRAGMA quick_check(5)`)
	if err != nil {
		return fmt.Errorf("store: quick_check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("store: quick_check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: quick_check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("store: quick_check: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Writable checks the database takes writes: it takes the write lock and
// lets it go (a read-only or vanished file fails; a full disk shows in the
// free-space check). A writer holding the lock longer than ctx allows
// fails it too.
func (d *DB) Writable(ctx context.Context) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "ROLLBACK")
	return err
}

// ErrNewerSchema is returned by Open for a database migrated by a newer
// analyzer.
var ErrNewerSchema = errors.New("store: database is newer than this analyzer")

// migrate applies the pending migrations, all in one transaction on one
// connection inside BEGIN IMMEDIATE, which takes the write lock before
// reading schema_migrations: two analyzer processes opening a new database
// at once then apply each file exactly once instead of racing, and a
// failing file leaves the database as it was. A database with none pending
// is only read: opening it takes no write lock.
func (d *DB) migrate(ctx context.Context) error {
	if _, err := d.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL -- µs since epoch
	)`); err != nil {
		return fmt.Errorf("store: create schema_migrations: %w", err)
	}
	ms, err := migrations.List()
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	applied, err := appliedVersions(ctx, d.db)
	if err != nil {
		return err
	}
	// A database a newer analyzer migrated has tables and columns this
	// one does not know: writing to it could lose what they hold.
	if err := checkNotNewer(applied, ms); err != nil {
		return err
	}
	if len(pending(ms, applied)) == 0 {
		return nil
	}
	return d.applyPending(ctx, ms)
}

// applyPending applies the migrations of ms that schema_migrations does
// not list, read again under the write lock: another process may have
// applied them since.
func (d *DB) applyPending(ctx context.Context, ms []migrations.Migration) (err error) {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	applied, err := appliedVersions(ctx, conn)
	if err != nil {
		return err
	}
	if err := checkNotNewer(applied, ms); err != nil {
		return err
	}
	fresh, err := isEmpty(ctx, conn)
	if err != nil {
		return err
	}
	// An empty database gets the schema the files leave in one step: the
	// files rebuild tables and reparse the schema as they go.
	if v, snapshot, snapErr := migrations.Snapshot(); fresh && len(applied) == 0 && snapErr == nil && v == ms[len(ms)-1].Version {
		if _, err := conn.ExecContext(ctx, snapshot); err != nil {
			return fmt.Errorf("store: migrations' schema.snapshot: %w", err)
		}
		for _, m := range ms {
			if err := recordApplied(ctx, conn, m); err != nil {
				return err
			}
			applied[m.Version] = true
		}
	}
	for _, m := range pending(ms, applied) {
		if _, err := conn.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("store: migration %s: %w", m.Name, err)
		}
		if err := recordApplied(ctx, conn, m); err != nil {
			return err
		}
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// recordApplied lists m in schema_migrations.
func recordApplied(ctx context.Context, conn *sql.Conn, m migrations.Migration) error {
	if _, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMicro()); err != nil {
		return fmt.Errorf("store: migration %s: %w", m.Name, err)
	}
	return nil
}

// isEmpty reports whether the database holds nothing but schema_migrations.
func isEmpty(ctx context.Context, conn *sql.Conn) (bool, error) {
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name != 'schema_migrations'`).Scan(&n); err != nil {
		return false, fmt.Errorf("store: reading the schema: %w", err)
	}
	return n == 0, nil
}

// appliedVersions is the set of versions schema_migrations lists.
func appliedVersions(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (map[int]bool, error) {
	rows, err := q.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("store: schema version: %w", err)
	}
	defer rows.Close()
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("store: schema version: %w", err)
		}
		applied[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: schema version: %w", err)
	}
	return applied, nil
}

// checkNotNewer fails with ErrNewerSchema when applied holds a version
// past the last of ms.
func checkNotNewer(applied map[int]bool, ms []migrations.Migration) error {
	known := ms[len(ms)-1].Version
	for v := range applied {
		if v > known {
			return fmt.Errorf("%w: the database has schema version %d, this analyzer knows up to %d; use the newer analyzer that migrated it",
				ErrNewerSchema, v, known)
		}
	}
	return nil
}

// pending is the migrations of ms that applied does not list, in order.
func pending(ms []migrations.Migration, applied map[int]bool) []migrations.Migration {
	var out []migrations.Migration
	for _, m := range ms {
		if !applied[m.Version] {
			out = append(out, m)
		}
	}
	return out
}
