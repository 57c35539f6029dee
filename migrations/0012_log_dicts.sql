-- Issue 27: the boots of one unit print nearly the same log, and each
-- attempt_log chunk compressed on its own stored it again (40 % of a
-- night-ladder database). A row here is the uncompressed first chunk of a
-- unit's log on a host (its first 16 KiB), keyed by a hash of both; later
-- chunks of that unit are zstd frames compressed against it (codec 3; the
-- frame header names the row). Rows are written once, never changed or
-- deleted: frames of any attempt may depend on them.
CREATE TABLE log_dicts (
    id      INTEGER PRIMARY KEY,        -- the zstd Dictionary_ID
    content BLOB NOT NULL
);
