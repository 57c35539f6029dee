-- matched: the text the rule matched in the finding's decisive line (at most
-- 1 KiB), so the UI can mark the decisive words inside a 16 KiB traceback
-- line. Findings stored before this version have none ('').
ALTER TABLE findings ADD COLUMN matched TEXT NOT NULL DEFAULT '';
