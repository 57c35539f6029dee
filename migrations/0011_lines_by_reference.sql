-- Issue 27: 20 KB a stored attempt on the night journal, most of it
-- journald cursors, phase-mark lines and log chunks half-filling pages.
--
-- attempt_lines: an attempt's evidence and context lines and its timeline
-- in one DEFLATE-compressed row (store/lineblob.go has the encoding), each
-- line's text a reference into attempt_log when the log holds it, each
-- timeline mark a reference to the line it shares cursor and text with. A
-- row per line cost a 128-byte cursor, an RFC 3339 time and an index entry
-- each; compressed together they share their cursors' prefixes. Attempts
-- stored before keep their evidence rows and timeline_json, which the
-- store still reads; their next save moves them here.
CREATE TABLE attempt_lines (
    attempt_id TEXT PRIMARY KEY REFERENCES attempts(id) ON DELETE CASCADE,
    data       BLOB NOT NULL
);

-- attempt_log becomes a rowid table: WITHOUT ROWID kept only ~1 KB of a
-- row in its b-tree page and put the rest on an overflow page of its own,
-- a fifth of the table unused. codec says how data is compressed: 0 S2
-- (chunks stored before), 1 DEFLATE (a third smaller on engine logs).
CREATE TABLE attempt_log_rowid (
    attempt_id TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL,
    lines      INTEGER NOT NULL,
    data       BLOB NOT NULL,
    codec      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (attempt_id, first_seq)
);

INSERT INTO attempt_log_rowid (attempt_id, first_seq, lines, data)
    SELECT attempt_id, first_seq, lines, data FROM attempt_log;

DROP TABLE attempt_log;
ALTER TABLE attempt_log_rowid RENAME TO attempt_log;

-- note_finding: the seq of the finding whose note is the attempt's note
-- (the verdict's note is the root finding's), which is then stored there
-- only; note is '' then. NULL: note holds the attempt's note.
ALTER TABLE attempts ADD COLUMN note_finding INTEGER;
