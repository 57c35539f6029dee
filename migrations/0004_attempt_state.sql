-- stop_requested: systemd logged "Stopping <unit>" for the attempt before it
-- ended (1) or not (0). An attempt stored while open keeps it, so a replay of
-- the next part of the journal ends it as stopped, not as exited.
ALTER TABLE attempts ADD COLUMN stop_requested INTEGER NOT NULL DEFAULT 0;

-- updated_at: when the attempt was last saved (µs since epoch). The largest
-- one tells a reader whether anything changed since it last looked (the UI
-- rebuilds its boot ladders only then).
ALTER TABLE attempts ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX attempts_updated_at ON attempts(updated_at);
