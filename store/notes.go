package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// NoteWritten reports whether the root-cause note of (attempt, finding) was
// written to the journal before (notes.Ledger).
func (d *DB) NoteWritten(attemptID, findingID string) (bool, error) {
	var one int
	err := d.db.QueryRow(`SELECT 1 FROM notes WHERE attempt_id = ? AND finding_id = ?`, attemptID, findingID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: note of %s/%s: %w", attemptID, findingID, err)
	}
	return true, nil
}

// RecordNote remembers that the note of (attempt, finding) was written;
// recording it again changes nothing.
func (d *DB) RecordNote(attemptID, findingID, messageID string) error {
	_, err := d.db.Exec(`INSERT INTO notes (attempt_id, finding_id, message_id, written_at) VALUES (?, ?, ?, ?)
		ON CONFLICT(attempt_id, finding_id) DO NOTHING`, attemptID, findingID, messageID, time.Now().UnixMicro())
	if err != nil {
		return fmt.Errorf("store: record note of %s/%s: %w", attemptID, findingID, err)
	}
	return nil
}

// CountNotes returns the number of notes recorded.
func (d *DB) CountNotes(ctx context.Context) (int, error) {
	var n int
	err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM notes`).Scan(&n)
	return n, err
}
