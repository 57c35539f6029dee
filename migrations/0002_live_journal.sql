-- Live journal following (analyzer serve): where to re-read from after a
-- restart so the tracker rebuilds the attempts still open, and the
-- root-cause notes already written back into the journal.

-- replay_cursor: first cursor of the oldest attempt still open when the
-- position was saved ('' when none was open). On restart the follower reads
-- again from there without saving, up to cursor, then goes on.
ALTER TABLE ingest_positions ADD COLUMN replay_cursor TEXT NOT NULL DEFAULT '';

CREATE TABLE notes (
    attempt_id TEXT NOT NULL,
    finding_id TEXT NOT NULL,
    message_id TEXT NOT NULL DEFAULT '',
    written_at INTEGER NOT NULL,            -- µs since epoch
    PRIMARY KEY (attempt_id, finding_id)
);
