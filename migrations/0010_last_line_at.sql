-- The time of an attempt's newest line (RFC 3339 with the source offset,
-- '' when unknown): a boot in progress whose phase no earlier boot of its
-- target tells has stalled once it printed nothing for the quiet limit
-- (boot_stalled), and its phase marks and evidence alone do not say when
-- it last printed (a boot loading weights prints progress for minutes).
ALTER TABLE attempts ADD COLUMN last_line_at_text TEXT NOT NULL DEFAULT '';
