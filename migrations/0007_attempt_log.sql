-- attempt_log: each attempt's own lines for the log viewer, as the tracker
-- keeps them (domain.LogHead first lines, domain.LogTail last once it has
-- ended). seq numbers the attempt's lines from 0, so a gap is lines not
-- kept. Rows are only added: a line, once stored, does not change.
CREATE TABLE attempt_log (
    attempt_id TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    time_us    INTEGER,                  -- µs since the epoch, NULL when unknown
    cursor     TEXT NOT NULL DEFAULT '',
    message    TEXT NOT NULL,
    PRIMARY KEY (attempt_id, seq)
) WITHOUT ROWID;

-- log_lines: how many lines the attempt had (kept or not).
ALTER TABLE attempts ADD COLUMN log_lines INTEGER NOT NULL DEFAULT 0;
