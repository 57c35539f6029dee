-- Keyset paging and search (web UI and /api/v1/attempts, issue 12).
-- Lists are ordered by (started_at DESC, id DESC) and page from a cursor on
-- that key: the index serves both the order and the cursor condition.
CREATE INDEX attempts_started_id ON attempts(started_at, id);

-- ?q= finds an attempt by its invocation id or container id, whole or by
-- prefix (as a range, which these indexes serve).
CREATE INDEX attempts_invocation_id ON attempts(invocation_id);
CREATE INDEX attempts_container_id  ON attempts(container_id);

-- Failure groups are (verdict, rule, fingerprint).
CREATE INDEX attempts_group ON attempts(verdict, rule, fingerprint);
