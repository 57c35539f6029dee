-- Evidence and context lines are keyed by their position in the attempt,
-- not by their text: the unique index over (cursor, message) copied every
-- line's text into an index, a quarter of a replay's save time. The saver
-- now drops a repeated (kind, cursor, message) itself before inserting.

CREATE TABLE evidence_by_position (
    attempt_id TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,            -- order within (attempt, kind)
    kind       TEXT NOT NULL CHECK (kind IN ('evidence', 'context')),
    finding_id TEXT,                        -- first finding citing the line, NULL if none
    time       TEXT NOT NULL DEFAULT '',    -- RFC 3339 with the source offset
    time_us    INTEGER,
    cursor     TEXT NOT NULL DEFAULT '',
    message    TEXT NOT NULL,
    PRIMARY KEY (attempt_id, kind, seq)
);

INSERT INTO evidence_by_position (attempt_id, seq, kind, finding_id, time, time_us, cursor, message)
    SELECT attempt_id, seq, kind, finding_id, time, time_us, cursor, message FROM evidence;

DROP TABLE evidence;

ALTER TABLE evidence_by_position RENAME TO evidence;
