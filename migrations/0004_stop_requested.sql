-- stop_requested: systemd logged "Stopping <unit>" for the attempt before it
-- ended (1) or not (0). An attempt stored while open keeps it, so a replay of
-- the next part of the journal ends it as stopped, not as exited.
ALTER TABLE attempts ADD COLUMN stop_requested INTEGER NOT NULL DEFAULT 0;
