-- Issue 27: the boots of one unit print nearly the same log, and each
-- attempt_log chunk compressed on its own stored it again (40 % of a
-- night-ladder database). A row here is a zstd raw-content dictionary: the
-- first chunk of at least 2 KiB a save wrote of a unit's log on a host, as
-- it was before compression (its first 16 KiB), keyed by a hash of host
-- and unit (store/logdict.go). Later chunks of that unit are zstd frames
-- compressed against it (codec 3; the frame header names the row). Rows
-- are written once, never changed or deleted: frames of any attempt may
-- depend on them.
CREATE TABLE log_dicts (
    id      INTEGER PRIMARY KEY,        -- the zstd Dictionary_ID
    content BLOB NOT NULL
);
