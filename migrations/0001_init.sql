-- 0001_init: boot attempts, their findings and evidence lines, and the
-- ingest positions that make resuming exactly-once.
-- Times: *_us columns and started_at/ended_at/ready_at are microseconds
-- since the Unix epoch (sortable, filterable); *_text columns keep the
-- source's RFC 3339 text with its UTC offset, which the UI and the JSON
-- contract show as-is.

CREATE TABLE attempts (
    id                    TEXT PRIMARY KEY,
    host                  TEXT NOT NULL DEFAULT '',
    unit                  TEXT NOT NULL DEFAULT '',
    invocation_id         TEXT NOT NULL DEFAULT '',
    container             TEXT NOT NULL DEFAULT '',
    container_id          TEXT NOT NULL DEFAULT '',
    engine                TEXT NOT NULL DEFAULT '',
    engine_version        TEXT NOT NULL DEFAULT '',
    started_at            INTEGER,          -- µs since epoch, NULL when unknown
    started_at_text       TEXT NOT NULL DEFAULT '',
    ended_at              INTEGER,          -- NULL while running
    ended_at_text         TEXT NOT NULL DEFAULT '',
    ready_at              INTEGER,          -- NULL unless readiness was reported
    ready_at_text         TEXT NOT NULL DEFAULT '',
    phase                 TEXT NOT NULL DEFAULT '',
    verdict               TEXT NOT NULL DEFAULT '',
    rule                  TEXT NOT NULL DEFAULT '',
    note                  TEXT NOT NULL DEFAULT '',
    exit_status           INTEGER,          -- NULL when unknown (not 0)
    exit_code             TEXT NOT NULL DEFAULT '',
    ended_by              TEXT NOT NULL DEFAULT '',
    restart_counter       INTEGER,
    restart_counter_after INTEGER,
    fingerprint           TEXT NOT NULL DEFAULT '',
    lines                 INTEGER NOT NULL DEFAULT 0,
    -- Main shape keys, copied out of shape_json so they can be queried and
    -- indexed; NULL when the engine did not report them.
    max_model_len         INTEGER,
    max_num_seqs          INTEGER,
    kv_cache_dtype        TEXT,
    kv_cache_memory_bytes INTEGER,
    kv_cache_tokens       INTEGER,
    max_concurrency       REAL,             -- vLLM prints fractions (3.21x)
    tensor_parallel_size  INTEGER,
    served_model_name     TEXT,
    shape_json            TEXT NOT NULL DEFAULT '{}',
    timeline_json         TEXT NOT NULL DEFAULT '[]'
);

CREATE INDEX attempts_host       ON attempts(host);
CREATE INDEX attempts_unit       ON attempts(unit);
CREATE INDEX attempts_engine     ON attempts(engine);
CREATE INDEX attempts_verdict    ON attempts(verdict);
CREATE INDEX attempts_phase      ON attempts(phase);
CREATE INDEX attempts_started_at ON attempts(started_at);
CREATE INDEX attempts_shape      ON attempts(max_model_len, max_num_seqs, kv_cache_dtype);
CREATE INDEX attempts_model      ON attempts(served_model_name);

CREATE TABLE findings (
    attempt_id    TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,         -- firing order within the attempt
    finding_id    TEXT NOT NULL,            -- verdict or non-root finding id
    rule          TEXT NOT NULL DEFAULT '',
    severity      TEXT NOT NULL DEFAULT '',
    message_id    TEXT NOT NULL DEFAULT '',
    phase         TEXT NOT NULL DEFAULT '',
    time          TEXT NOT NULL DEFAULT '', -- RFC 3339 with the source offset
    time_us       INTEGER,
    note          TEXT NOT NULL DEFAULT '',
    captures_json TEXT NOT NULL DEFAULT '{}',
    -- The finding's own evidence lines, exactly as the rule recorded them;
    -- the evidence table below holds the attempt's union of them, where a
    -- line cited by two findings can only appear once.
    evidence_json TEXT NOT NULL DEFAULT '[]',
    UNIQUE (attempt_id, finding_id, rule)
);

CREATE INDEX findings_finding_id ON findings(finding_id);

CREATE TABLE evidence (
    attempt_id TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,            -- order within (attempt, kind)
    kind       TEXT NOT NULL CHECK (kind IN ('evidence', 'context')),
    finding_id TEXT,                        -- first finding citing the line, NULL if none
    time       TEXT NOT NULL DEFAULT '',    -- RFC 3339 with the source offset
    time_us    INTEGER,
    cursor     TEXT NOT NULL DEFAULT '',
    message    TEXT NOT NULL,
    UNIQUE (attempt_id, kind, cursor, message)
);

CREATE TABLE ingest_positions (
    source     TEXT PRIMARY KEY,            -- file path, "-" or "journal"
    cursor     TEXT NOT NULL DEFAULT '',    -- last journald __CURSOR consumed
    "offset"   INTEGER NOT NULL DEFAULT 0,  -- bytes consumed of a file source
    updated_at INTEGER NOT NULL             -- µs since epoch
);
