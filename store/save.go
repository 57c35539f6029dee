package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// Position is domain.Position: how far ingest has read a source.
type Position = domain.Position

// SaveAttempts upserts the attempts by ID and, when pos is not nil, records
// pos, all in one transaction: either every change is committed or none is.
// An attempt's findings, evidence and context rows are replaced, so saving
// the same attempts again leaves the database unchanged (same rows, same
// counts). A finding repeating an earlier finding's (id, rule) pair and an
// evidence or context line repeating an earlier (cursor, message) of the
// same list are kept only once; a line in both lists is one row. It fails
// on an attempt without an ID or a nil attempt, and on any database error;
// the error names the attempt.
func (d *DB) SaveAttempts(ctx context.Context, attempts []*domain.Attempt, pos *Position) (err error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// The position goes first: a deferred SQLite transaction takes the write
	// lock at its first write, and starting with a write avoids a
	// read-then-upgrade lock conflict with another writer.
	if pos != nil {
		if pos.Source == "" {
			return errors.New("store: position without a source")
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ingest_positions (source, cursor, "offset", replay_cursor, updated_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT(source) DO UPDATE SET cursor = excluded.cursor, "offset" = excluded."offset",
				replay_cursor = excluded.replay_cursor, updated_at = excluded.updated_at`,
			pos.Source, pos.Cursor, pos.Offset, pos.ReplayCursor, time.Now().UnixMicro()); err != nil {
			return fmt.Errorf("store: save position of %s: %w", pos.Source, err)
		}
	}
	// The statements run without ctx's cancellation: mattn/go-sqlite3 runs
	// each statement given a cancellable context on a goroutine of its own
	// (to interrupt it): a goroutine and two switches per statement. A
	// cancelled ctx still ends the save between attempts, and rolls the
	// transaction back (BeginTx watches it).
	sctx := context.WithoutCancel(ctx)
	var s *saver
	for i, a := range attempts {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("store: save: %w", err)
		}
		if a == nil {
			return fmt.Errorf("store: attempt #%d is nil", i)
		}
		if a.ID == "" {
			return fmt.Errorf("store: attempt #%d (unit %q, started %s) has no ID", i, a.Unit, timeText(a.StartedAt))
		}
		if s == nil {
			if s, err = prepareSaver(sctx, tx, d.nextUpdate(), &d.dicts); err != nil {
				return fmt.Errorf("store: prepare: %w", err)
			}
			defer s.close()
		}
		if err := s.saveAttempt(sctx, a); err != nil {
			return fmt.Errorf("store: save attempt %s: %w", a.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	if s != nil {
		d.dicts.commit(s.committedDicts())
	}
	return nil
}

const upsertAttempt = `INSERT INTO attempts (
	id, host, unit, invocation_id, container, container_id, engine, engine_version,
	started_at, started_at_text, ended_at, ended_at_text, ready_at, ready_at_text,
	phase, verdict, rule, note, exit_status, exit_code, ended_by, stop_requested,
	restart_counter, restart_counter_after, fingerprint, lines, last_line_at_text,
	max_model_len, max_num_seqs, kv_cache_dtype, kv_cache_memory_bytes, kv_cache_tokens,
	max_concurrency, tensor_parallel_size, served_model_name, shape_json, timeline_json, updated_at, note_finding,
	log_lines, log_last
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '[]', ?, ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET
	host = excluded.host, unit = excluded.unit, invocation_id = excluded.invocation_id,
	container = excluded.container, container_id = excluded.container_id,
	engine = excluded.engine, engine_version = excluded.engine_version,
	started_at = excluded.started_at, started_at_text = excluded.started_at_text,
	ended_at = excluded.ended_at, ended_at_text = excluded.ended_at_text,
	ready_at = excluded.ready_at, ready_at_text = excluded.ready_at_text,
	phase = excluded.phase, verdict = excluded.verdict, rule = excluded.rule, note = excluded.note,
	exit_status = excluded.exit_status, exit_code = excluded.exit_code, ended_by = excluded.ended_by,
	stop_requested = excluded.stop_requested, restart_counter = excluded.restart_counter, restart_counter_after = excluded.restart_counter_after,
	fingerprint = excluded.fingerprint, lines = excluded.lines, last_line_at_text = excluded.last_line_at_text,
	max_model_len = excluded.max_model_len, max_num_seqs = excluded.max_num_seqs,
	kv_cache_dtype = excluded.kv_cache_dtype, kv_cache_memory_bytes = excluded.kv_cache_memory_bytes,
	kv_cache_tokens = excluded.kv_cache_tokens, max_concurrency = excluded.max_concurrency,
	tensor_parallel_size = excluded.tensor_parallel_size, served_model_name = excluded.served_model_name,
	shape_json = excluded.shape_json, timeline_json = excluded.timeline_json, updated_at = excluded.updated_at,
	note_finding = excluded.note_finding
	RETURNING log_last, rowid`

const (
	deleteFindings = `DELETE FROM findings WHERE attempt_id = ?`
	deleteEvidence = `DELETE FROM evidence WHERE attempt_id = ?`
	insertFinding  = `INSERT INTO findings (attempt_id, seq, finding_id, rule, severity,
			message_id, phase, time, time_us, note, captures_json, evidence_json, matched)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(attempt_id, finding_id, rule) DO NOTHING`
	insertLines = `INSERT INTO attempt_lines (attempt_id, data) VALUES (?, ?)
			ON CONFLICT(attempt_id) DO UPDATE SET data = excluded.data`
	deleteLines     = `DELETE FROM attempt_lines WHERE attempt_id = ?`
	selectStoredLog = `SELECT data, codec FROM attempt_log WHERE attempt_id = ? ORDER BY first_seq`
	insertLogChunk  = `INSERT OR IGNORE INTO attempt_log (attempt_id, first_seq, lines, data, codec) VALUES (?, ?, ?, ?, ?)`
	updateLogLines  = `UPDATE attempts SET log_lines = ?, log_last = ? WHERE id = ?`
)

// saveLog adds the lines of a.Log after last (the seq of the last line
// stored before, -1 for none) in chunks of logChunkLines: kept lines never
// change, so a re-save of a running attempt writes only its new ones. The
// row's log_lines and log_last follow, unless fresh: the upsert that
// inserted it wrote them (insertedLog).
func (s *saver) saveLog(ctx context.Context, a *domain.Attempt, last int, fresh bool) error {
	if a.Log == nil {
		return nil
	}
	lines := a.Log.Lines
	i, _ := slices.BinarySearchFunc(lines, last+1, func(l domain.LogLine, seq int) int { return l.Seq - seq })
	lines = lines[i:]
	if len(lines) == 0 {
		return nil
	}
	newLast := lines[len(lines)-1].Seq
	id := logDictID(a.Host, a.Unit)
	dict, err := s.dict(ctx, id)
	if err != nil {
		return err
	}
	for len(lines) > 0 {
		n := min(len(lines), logChunkLines)
		s.raw = rawLogChunk(s.raw[:0], lines[:n])
		codec := codecZstd
		if dict != nil {
			s.blob, codec = s.dicts.compress(id, dict, s.blob[:0], s.raw), codecZstdDict
		} else {
			s.blob = compress(s.blob[:0], s.raw)
		}
		if _, err := s.logChunk.ExecContext(ctx, a.ID, lines[0].Seq, n, s.blob, codec); err != nil {
			return fmt.Errorf("log lines from %d: %w", lines[0].Seq, err)
		}
		if dict == nil && len(s.raw) >= minDictSource && !s.dictTried[id] {
			// The chunk before compression, numbers and all: its seq and time
			// deltas and lengths recur from boot to boot nearly as its
			// text does (the text alone made the night journal's log 31 %
			// larger).
			if dict, err = s.newDict(ctx, id, s.raw[:min(len(s.raw), maxDict)]); err != nil {
				return err
			}
		}
		lines = lines[n:]
	}
	if fresh {
		return nil
	}
	if _, err := s.logTotal.ExecContext(ctx, a.Log.Total, newLast, a.ID); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	return nil
}

// saver holds the statements of one SaveAttempts, prepared once for all
// its attempts: compiling them again per row was a third of a replay's save.
type saver struct {
	upsert, delFindings, delEvidence, finding, lines, delLines *sql.Stmt
	logChunk, logTotal, storedLog, selectMaxRowID              *sql.Stmt
	now                                                        int64 // µs since epoch: updated_at of the saved attempts
	// maxRowID is the largest rowid of attempts in this transaction:
	// a row the upsert returns with a larger one was inserted, not
	// updated (SQLite gives a new row the largest rowid + 1; were that
	// taken, a random free one, which then reads as an update, the
	// slower path that is right either way). It is read after the first
	// upsert, which holds the write lock by then (see SaveAttempts on
	// reading before the first write); until then it is the largest
	// int64, and that first save inserts the log's columns as their
	// defaults and takes the slower path.
	maxRowID int64
	buf      bytes.Buffer // a finding's captures
	// blob holds the row being written (a log chunk, an attempt_lines
	// row): SQLite copies a bound blob, so one buffer serves them all.
	blob []byte
	raw  []byte // a log chunk before compression

	// The log dictionaries (logdict.go): the database's, and those this
	// transaction read or wrote, by id (nil: there is none yet), for
	// dicts once it commits.
	dicts      *logDicts
	txDicts    map[uint32][]byte
	dictTried  map[uint32]bool // ids whose row this transaction tried to write
	chunks     *chunkReader
	insertDict *sql.Stmt
}

// dict returns the content of the log dictionary id, nil when there is
// none or its row is not one this store wrote (the unit's chunks are then
// compressed alone, as before dictionaries).
func (s *saver) dict(ctx context.Context, id uint32) ([]byte, error) {
	if c, ok := s.txDicts[id]; ok {
		return c, nil
	}
	c := s.dicts.committed(id)
	if c == nil {
		var err error
		c, err = readDict(ctx, s.chunks.q, id)
		if errors.Is(err, errBadDict) {
			s.dictTried[id] = true // INSERT OR IGNORE would keep it
			c, err = nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("log dictionary %d: %w", id, err)
		}
	}
	s.txDicts[id] = c
	return c, nil
}

// newDict stores c as the log dictionary id and returns it; if the row
// exists after all, its content.
func (s *saver) newDict(ctx context.Context, id uint32, c []byte) ([]byte, error) {
	s.dictTried[id] = true
	c = bytes.Clone(c)
	res, err := s.insertDict.ExecContext(ctx, id, c)
	if err != nil {
		return nil, fmt.Errorf("log dictionary %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		delete(s.txDicts, id)
		return s.dict(ctx, id)
	}
	s.txDicts[id] = c
	return c, nil
}

// committedDicts are the dictionaries the transaction read or wrote.
func (s *saver) committedDicts() map[uint32][]byte {
	out := make(map[uint32][]byte, len(s.txDicts))
	for id, c := range s.txDicts {
		if c != nil {
			out[id] = c
		}
	}
	return out
}

func prepareSaver(ctx context.Context, tx *sql.Tx, now int64, dicts *logDicts) (*saver, error) {
	s := &saver{now: now, dicts: dicts, txDicts: map[uint32][]byte{}, dictTried: map[uint32]bool{}}
	s.chunks = &chunkReader{ctx: ctx, q: tx, dicts: dicts, local: s.txDicts}
	for _, p := range []struct {
		stmt **sql.Stmt
		q    string
	}{{&s.upsert, upsertAttempt}, {&s.delFindings, deleteFindings}, {&s.delEvidence, deleteEvidence},
		{&s.finding, insertFinding}, {&s.lines, insertLines}, {&s.delLines, deleteLines},
		{&s.logChunk, insertLogChunk}, {&s.logTotal, updateLogLines}, {&s.storedLog, selectStoredLog},
		{&s.selectMaxRowID, `SELECT coalesce(max(rowid), 0) FROM attempts`},
		{&s.insertDict, `INSERT OR IGNORE INTO log_dicts (id, content) VALUES (?, ?)`}} {
		st, err := tx.PrepareContext(ctx, p.q)
		if err != nil {
			s.close()
			return nil, err
		}
		*p.stmt = st
	}
	s.maxRowID = math.MaxInt64
	return s, nil
}

func (s *saver) close() {
	for _, st := range []*sql.Stmt{s.upsert, s.delFindings, s.delEvidence, s.finding, s.lines, s.delLines, s.logChunk, s.logTotal, s.storedLog, s.selectMaxRowID, s.insertDict} {
		if st != nil {
			_ = st.Close()
		}
	}
}

func (s *saver) saveAttempt(ctx context.Context, a *domain.Attempt) error {
	shape := a.Shape
	if shape == nil {
		shape = domain.Shape{}
	}
	shapeJSON, err := encodeShape(shape)
	if err != nil {
		return fmt.Errorf("shape: %w", err)
	}
	// The timeline goes to attempt_lines (saveLines), and the note, when a
	// finding's note is the same text, is stored with that finding only.
	note, noteFinding := a.Note, noteFinding(a)
	if noteFinding.Valid {
		note = ""
	}
	// An update leaves log_last as it was: RETURNING gives the stored one,
	// the seq of the last log line saved before (-1 for none). A new row
	// (see maxRowID) takes what saveLog would write after it
	// (insertedLog), and needs no deletes either: nothing can refer to an
	// id not yet stored (foreign keys). A replay saves each attempt once,
	// into a database without it: three statements fewer an attempt (two
	// deletes and the log's update), 5 % of a night-ladder replay's CPU.
	first := s.maxRowID == math.MaxInt64
	insLines, insLast := 0, -1 // the columns' defaults, as before insertedLog
	if !first {
		insLines, insLast = insertedLog(a)
	}
	var logLast int
	var rowID int64
	if err := s.upsert.QueryRowContext(ctx,
		a.ID, a.Host, a.Unit, a.InvocationID, a.Container, a.ContainerID, a.Engine, a.EngineVersion,
		timeMicros(a.StartedAt), timeText(a.StartedAt), timeMicros(a.EndedAt), timeText(a.EndedAt),
		timeMicros(a.ReadyAt), timeText(a.ReadyAt),
		string(a.Phase), string(a.Verdict), a.Rule, note, nullInt(a.ExitStatus), a.ExitCode, a.EndedBy, a.StopRequested,
		nullInt(a.RestartCounter), nullInt(a.RestartCounterAfter), a.Fingerprint, a.Lines, timeText(a.LastLineAt),
		shapeInt(shape, domain.ShapeMaxModelLen), shapeInt(shape, domain.ShapeMaxNumSeqs),
		shapeText(shape, domain.ShapeKVCacheDtype), shapeInt(shape, domain.ShapeKVCacheMemoryBytes),
		shapeInt(shape, domain.ShapeKVCacheTokens), shapeFloat(shape, domain.ShapeMaxConcurrency),
		shapeInt(shape, domain.ShapeTensorParallelSize), shapeText(shape, domain.ShapeServedModelName),
		shapeJSON, s.now, noteFinding, insLines, insLast,
	).Scan(&logLast, &rowID); err != nil {
		return err
	}
	fresh := rowID > s.maxRowID
	if first {
		if err := s.selectMaxRowID.QueryRowContext(ctx).Scan(&s.maxRowID); err != nil {
			return err
		}
	}
	if fresh {
		s.maxRowID, logLast = rowID, -1
	} else {
		// Replace, not merge: the analyzer's latest view of the attempt
		// is the truth, and a re-save must not accumulate rows.
		if _, err := s.delFindings.ExecContext(ctx, a.ID); err != nil {
			return err
		}
		if _, err := s.delEvidence.ExecContext(ctx, a.ID); err != nil {
			return err
		}
	}
	evSeq := evidenceSeqs(a.Evidence)
	for i, f := range a.Findings {
		s.buf.Reset()
		writeStringMap(&s.buf, f.Captures)
		evJSON, err := evidenceRefs(f.Evidence, evSeq)
		if err != nil {
			return fmt.Errorf("finding %s evidence: %w", f.ID, err)
		}
		if _, err := s.finding.ExecContext(ctx,
			a.ID, i, f.ID, f.Rule, string(f.Severity), f.MessageID, string(f.Phase),
			timeText(f.Time), timeMicros(f.Time), f.Note, s.buf.String(), string(evJSON), f.Match); err != nil {
			return fmt.Errorf("finding %s: %w", f.ID, err)
		}
	}
	if err := s.saveLines(ctx, a, evSeq, logLast, fresh); err != nil {
		return err
	}
	return s.saveLog(ctx, a, logLast, fresh)
}

// insertedLog is the log_lines and log_last of a's row once saveLog has
// saved a's log into a database that held none of it: its total and the
// seq of its last kept line, or the column defaults (0, -1) when it kept
// none.
func insertedLog(a *domain.Attempt) (total, last int) {
	if a.Log == nil || len(a.Log.Lines) == 0 || a.Log.Lines[len(a.Log.Lines)-1].Seq < 0 {
		return 0, -1
	}
	return a.Log.Total, a.Log.Lines[len(a.Log.Lines)-1].Seq
}

// saveLines writes the attempt's evidence and context lines and its
// timeline as one attempt_lines row (lineblob.go), or none when it has
// none. A line in both lists (same cursor, message and time) is stored
// once with both positions. Within a list a line repeating an earlier one
// (same cursor and message) is skipped. A line or mark whose text is that
// of a line of the attempt's stored log (as it stands once this save is
// done) refers to it instead of holding the text again: for a replayed
// attempt that is nearly every line. Evidence lines carry their role (none
// for context lines and attempts judged without roles). Rows an earlier
// version stored in evidence were deleted by the caller.
func (s *saver) saveLines(ctx context.Context, a *domain.Attempt, evSeq map[lineKey]int, logLast int, fresh bool) error {
	type row struct {
		e                 domain.Evidence
		time              string
		evidence, context sql.NullInt64
	}
	rows := make([]row, 0, len(evSeq)+len(a.Context))
	byKey := make(map[lineKey]int, len(evSeq)) // evidence line → its index in rows
	for i, e := range a.Evidence {
		k := lineKey{e.Cursor, e.Message}
		if evSeq[k] != i {
			continue // a repeat
		}
		byKey[k] = len(rows)
		rows = append(rows, row{e: e, time: timeText(e.Time), evidence: sql.NullInt64{Int64: int64(i), Valid: true}})
	}
	seen := make(map[lineKey]bool, len(a.Context))
	for i, e := range a.Context {
		k := lineKey{e.Cursor, e.Message}
		if seen[k] {
			continue
		}
		seen[k] = true
		ctxSeq := sql.NullInt64{Int64: int64(i), Valid: true}
		t := timeText(e.Time)
		if j, ok := byKey[k]; ok && rows[j].time == t && !rows[j].context.Valid {
			rows[j].context = ctxSeq
			continue
		}
		rows = append(rows, row{e: e, time: t, context: ctxSeq})
	}
	if len(rows) == 0 && len(a.Timeline) == 0 {
		if fresh {
			return nil
		}
		if _, err := s.delLines.ExecContext(ctx, a.ID); err != nil {
			return fmt.Errorf("lines: %w", err)
		}
		return nil
	}
	inLog, err := s.logIndex(ctx, a, logLast)
	if err != nil {
		return err
	}
	ref := func(msg string) (string, sql.NullInt64) {
		// An empty text costs nothing inline and needs no log to load.
		if n, ok := inLog[msg]; ok && msg != "" {
			return "", sql.NullInt64{Int64: int64(n), Valid: true}
		}
		return msg, sql.NullInt64{}
	}
	lines := make([]lineRec, len(rows))
	for i, r := range rows {
		l := lineRec{evSeq: r.evidence, ctxSeq: r.context, time: r.time, cursor: r.e.Cursor}
		if r.evidence.Valid && r.e.Role != 0 {
			l.role = sql.NullString{String: r.e.Role.String(), Valid: true}
		}
		l.message, l.logSeq = ref(r.e.Message)
		lines[i] = l
	}
	marks := make([]markRec, len(a.Timeline))
	for i, m := range a.Timeline {
		marks[i] = markRec{phase: string(m.Phase), time: timeText(m.Time), cursor: m.Cursor}
		marks[i].message, marks[i].logSeq = ref(m.Message)
	}
	s.blob = appendLines(s.blob[:0], lines, marks)
	if _, err := s.lines.ExecContext(ctx, a.ID, s.blob); err != nil {
		return fmt.Errorf("lines: %w", err)
	}
	return nil
}

// logIndex maps each message of the attempt's stored log, as it stands
// once this save is done, to the seq of its first line. So whether an
// evidence row refers to a log line depends on the log alone, not on which
// save stored it: a second replay, or one resumed after a kill, leaves the
// rows a clean one leaves. The log in memory is the tracker's: from line 0
// on, it holds every line earlier saves stored of the attempt (they store
// what it held); an attempt resumed from the database holds only lines
// after the stored ones, which are then read back.
func (s *saver) logIndex(ctx context.Context, a *domain.Attempt, logLast int) (map[string]int, error) {
	var lines []domain.LogLine
	if a.Log != nil {
		lines = a.Log.Lines
	}
	covered := len(lines) > 0 && lines[0].Seq == 0 && lines[len(lines)-1].Seq >= logLast
	idx := make(map[string]int, len(lines))
	if logLast >= 0 && !covered {
		rows, err := s.storedLog.QueryContext(ctx, a.ID)
		if err != nil {
			return nil, fmt.Errorf("stored log: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var data []byte
			var codec int
			if err := rows.Scan(&data, &codec); err != nil {
				return nil, fmt.Errorf("stored log: %w", err)
			}
			if err := walkLogChunk(s.chunks, data, codec, func(seq int, _ int64, msg []byte) {
				if _, dup := idx[string(msg)]; !dup {
					idx[string(msg)] = seq
				}
			}); err != nil {
				return nil, fmt.Errorf("stored log: %w", err)
			}
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("stored log: %w", err)
		}
	}
	for _, l := range lines {
		if _, dup := idx[l.Message]; !dup && (covered || l.Seq > logLast) {
			idx[l.Message] = l.Seq
		}
	}
	return idx, nil
}

// lineKey identifies an evidence line: the same text at another cursor
// (a reassembled piece) is another line.
type lineKey struct{ cursor, message string }

// evidenceSeqs maps each evidence line to the seq of its row (the index of
// its first occurrence, as saveLines numbers them).
func evidenceSeqs(ev []domain.Evidence) map[lineKey]int {
	m := make(map[lineKey]int, len(ev))
	for i, e := range ev {
		k := lineKey{e.Cursor, e.Message}
		if _, ok := m[k]; !ok {
			m[k] = i
		}
	}
	return m
}

// evidenceRefs is a finding's evidence_json: each line the attempt's
// evidence rows hold as the seq of its row (a number), any other in full (an
// object), so a line's text is stored once, not once per citing finding.
func evidenceRefs(ev []domain.Evidence, seqs map[lineKey]int) (string, error) {
	b := []byte{'['}
	for i, e := range ev {
		if i > 0 {
			b = append(b, ',')
		}
		if seq, ok := seqs[lineKey{e.Cursor, e.Message}]; ok {
			b = strconv.AppendInt(b, int64(seq), 10)
			continue
		}
		full, err := json.Marshal(e)
		if err != nil {
			return "", err
		}
		b = append(b, full...)
	}
	return string(append(b, ']')), nil
}

// noteFinding is the seq of the first finding stored (not a repeat of an
// earlier finding's (id, rule), which insertFinding skips) whose note is
// a's, NULL when none is or a has none.
func noteFinding(a *domain.Attempt) sql.NullInt64 {
	if a.Note == "" {
		return sql.NullInt64{}
	}
	type pair struct{ id, rule string }
	seen := make(map[pair]bool, len(a.Findings))
	for i, f := range a.Findings {
		p := pair{f.ID, f.Rule}
		if seen[p] {
			continue
		}
		seen[p] = true
		if f.Note == a.Note {
			return sql.NullInt64{Int64: int64(i), Valid: true}
		}
	}
	return sql.NullInt64{}
}

// nextUpdate returns the updated_at of a save: now in µs, but always past
// the previous save's, so the largest updated_at grows with every save even
// when the clock steps back.
func (d *DB) nextUpdate() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastUpdate = max(time.Now().UnixMicro(), d.lastUpdate+1)
	return d.lastUpdate
}

// Version changes whenever an attempt is saved (by any process): the number
// of attempts and the latest updated_at. A reader that derives something
// from all attempts (boot ladders) rebuilds it only when this changed.
//
// Counting the attempts reads a whole index, a few ms under live ingest on
// every page: while SQLite's data_version (on a connection kept for it,
// which never writes, so any commit changes it) stays the same, the last
// version is returned without counting.
func (d *DB) Version(ctx context.Context) (string, error) {
	d.verMu.Lock()
	defer d.verMu.Unlock()
	if d.verConn == nil {
		conn, err := d.db.Conn(ctx)
		if err != nil {
			return "", fmt.Errorf("store: version: %w", err)
		}
		d.verConn, d.verLast = conn, ""
	}
	var dataVersion int64
	if err := d.verConn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&dataVersion); err != nil {
		d.dropVersionConn()
		return "", fmt.Errorf("store: version: %w", err)
	}
	if d.verLast != "" && dataVersion == d.verData {
		return d.verLast, nil
	}
	var n, last int64
	if err := d.verConn.QueryRowContext(ctx, `SELECT count(*), COALESCE(max(updated_at), 0) FROM attempts`).Scan(&n, &last); err != nil {
		d.dropVersionConn()
		return "", fmt.Errorf("store: version: %w", err)
	}
	// A commit between the two reads changes data_version again: the next
	// call counts anew.
	d.verData, d.verLast = dataVersion, fmt.Sprintf("%d/%d", n, last)
	return d.verLast, nil
}

// dropVersionConn gives up Version's connection (after a failure, which
// may have been a canceled request's); the next Version opens another.
// d.verMu is held.
func (d *DB) dropVersionConn() {
	if d.verConn != nil {
		_ = d.verConn.Close()
	}
	d.verConn, d.verLast = nil, ""
}

// Updated returns the id and updated_at (µs) of every attempt saved at or
// after since: a reader that keeps up with the database compares them with
// what it holds and fetches only the attempts that changed.
func (d *DB) Updated(ctx context.Context, since time.Time) (map[string]int64, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT id, updated_at FROM attempts WHERE updated_at >= ?`, since.UnixMicro())
	if err != nil {
		return nil, fmt.Errorf("store: updated: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var at int64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("store: updated: %w", err)
		}
		out[id] = at
	}
	return out, rows.Err()
}

// Position returns the recorded position of source; ok is false when none
// was recorded yet (start from the beginning).
func (d *DB) Position(ctx context.Context, source string) (pos Position, ok bool, err error) {
	err = d.db.QueryRowContext(ctx, `SELECT source, cursor, "offset", replay_cursor FROM ingest_positions WHERE source = ?`, source).
		Scan(&pos.Source, &pos.Cursor, &pos.Offset, &pos.ReplayCursor)
	if errors.Is(err, sql.ErrNoRows) {
		return Position{}, false, nil
	}
	if err != nil {
		return Position{}, false, fmt.Errorf("store: position of %s: %w", source, err)
	}
	return pos, true, nil
}
