-- Saving a replay's attempts was half its time, most of it bytes written
-- and index entries kept for nothing.
--
-- evidence: one row per line of an attempt, not one per (line, list): a
-- line that is both evidence and context (the decisive line of a
-- traceback) was stored twice. evidence_seq is the line's position in the
-- attempt's evidence list (what a finding's evidence_json cites, as the
-- seq column did), context_seq its position in the context list; either
-- is NULL when the line is not in that list. seq numbers the rows, evidence
-- lines first. message is NULL when the text is that of line log_seq of
-- the attempt's own log (attempt_log), which holds it already.
CREATE TABLE evidence_once (
    attempt_id   TEXT NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    evidence_seq INTEGER,
    context_seq  INTEGER,
    finding_id   TEXT,                      -- first finding citing the line, NULL if none
    role         TEXT,                      -- see 0008; NULL unless evidence_seq is set
    time         TEXT NOT NULL DEFAULT '',  -- RFC 3339 with the source offset
    time_us      INTEGER,
    cursor       TEXT NOT NULL DEFAULT '',
    message      TEXT,
    log_seq      INTEGER,
    PRIMARY KEY (attempt_id, seq),
    CHECK ((message IS NULL) = (log_seq IS NOT NULL))
);

-- An evidence row and a context row of the same attempt with the same
-- cursor, message and time become one row.
INSERT INTO evidence_once (attempt_id, seq, evidence_seq, context_seq, finding_id, role, time, time_us, cursor, message)
SELECT attempt_id, row_number() OVER (PARTITION BY attempt_id ORDER BY ctx_only, pos) - 1,
       evidence_seq, context_seq, finding_id, role, time, time_us, cursor, message
FROM (
    SELECT e.attempt_id, 0 AS ctx_only, e.seq AS pos, e.seq AS evidence_seq,
           (SELECT min(c.seq) FROM evidence c WHERE c.attempt_id = e.attempt_id AND c.kind = 'context'
                AND c.cursor = e.cursor AND c.message = e.message AND c.time = e.time) AS context_seq,
           e.finding_id, e.role, e.time, e.time_us, e.cursor, e.message
    FROM evidence e WHERE e.kind = 'evidence'
    UNION ALL
    SELECT c.attempt_id, 1, c.seq, NULL, c.seq, NULL, NULL, c.time, c.time_us, c.cursor, c.message
    FROM evidence c WHERE c.kind = 'context' AND NOT EXISTS (
        SELECT 1 FROM evidence e WHERE e.attempt_id = c.attempt_id AND e.kind = 'evidence'
            AND e.cursor = c.cursor AND e.message = c.message AND e.time = c.time)
);

DROP TABLE evidence;
ALTER TABLE evidence_once RENAME TO evidence;

-- Indexes no query needs, each an entry written per saved attempt:
-- attempts_started_id (started_at, id) serves what attempts_started_at
-- did, attempts_group (verdict, rule, fingerprint) what attempts_verdict
-- did; nothing filters or sorts by phase, shape or model.
DROP INDEX attempts_started_at;
DROP INDEX attempts_verdict;
DROP INDEX attempts_phase;
DROP INDEX attempts_shape;
DROP INDEX attempts_model;

-- timeline_json may now also be a BLOB: the same JSON, S2-compressed
-- (github.com/klauspost/compress/s2, one block), as the store writes it;
-- TEXT rows written before stay as they are.
