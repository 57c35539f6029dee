-- role: what an evidence line stands for in the judge's state, the names
-- of domain.EvidenceRole joined by commas ('ready', 'last_error',
-- 'exception', 'exit,end', ...), so that a later run continuing an attempt
-- left open puts each line back where it was instead of guessing from the
-- verdict (rules.Judge.Restore). NULL for context lines and for lines
-- stored before this version, which a resume still places by the verdict.
ALTER TABLE evidence ADD COLUMN role TEXT;
