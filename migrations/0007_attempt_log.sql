-- attempt_log: each attempt's own lines for the log viewer, as the tracker
-- keeps them (domain.LogHead first lines, domain.LogTail last once it has
-- ended), in S2-compressed chunks of up to 256 lines (store/logchunk.go
-- has the encoding): a row per line doubled a replay's time and its
-- database. Lines are numbered (seq) from 0 among all the attempt's lines,
-- so a gap is lines not kept. Chunks are only added: each save adds the
-- lines after the last one stored (attempts.log_last).
CREATE TABLE attempt_log (
    attempt_id TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL,         -- seq of the chunk's first line
    lines      INTEGER NOT NULL,         -- lines in data
    data       BLOB NOT NULL,
    PRIMARY KEY (attempt_id, first_seq)
) WITHOUT ROWID;

-- log_lines: how many lines the attempt had (kept or not); log_last: the
-- seq of the last line stored (-1: none), so a re-save knows which lines
-- are new without reading any.
ALTER TABLE attempts ADD COLUMN log_lines INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN log_last INTEGER NOT NULL DEFAULT -1;
