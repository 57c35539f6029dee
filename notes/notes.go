// Package notes writes the analyzer's root-cause notes back into the
// journal, where operators look first: one entry per (attempt, finding),
// sent over journald's native protocol (systemd.journal-fields(7)), with
// OBJECT_SYSTEMD_UNIT set so that `journalctl -u UNIT` shows it next to the
// engine's own lines when the analyzer runs as root, and a stable
// MESSAGE_ID per verdict or finding so that `journalctl MESSAGE_ID=…` finds
// them all.
package notes

import (
	"fmt"
	"strings"
	"sync"

	"github.com/llmfleet/analyzer/domain"
)

// Identifier is the SYSLOG_IDENTIFIER of every note; the tracker never
// reads entries with it as engine output.
const Identifier = "analyzer"

// Journal field names of a note besides MESSAGE, MESSAGE_ID and PRIORITY.
const (
	FieldAttempt      = "ANALYZER_ATTEMPT"
	FieldVerdict      = "ANALYZER_VERDICT"
	FieldFinding      = "ANALYZER_FINDING"
	FieldRule         = "ANALYZER_RULE"
	FieldInvocationID = "ANALYZER_INVOCATION_ID"
)

// Sender delivers one journal entry (journal.Send of go-systemd has this
// shape; tests may pass the real one too).
type Sender func(message string, priority int, fields map[string]string) error

// Ledger remembers which notes were written, across restarts (the database
// has it, see store.NotesWritten / store.RecordNote).
type Ledger interface {
	NoteWritten(attemptID, findingID string) (bool, error)
	RecordNote(attemptID, findingID, messageID string) error
}

// Writer writes each (attempt, finding) note once.
type Writer struct {
	send   Sender
	ledger Ledger

	mu      sync.Mutex
	written map[string]bool
	// inJournal holds notes found in the journal at start; the first offer
	// of one records it in the ledger (it was sent, then the process died
	// before recording it).
	inJournal map[string]bool
	// Written counts notes sent; Failed counts send errors.
	Written, Failed int64
}

// NewWriter returns a writer that sends through send and remembers notes in
// ledger. known holds notes already in the journal ("attempt\x00finding"
// keys, see Key), found by scanning it at start: a note sent just before a
// crash, but not yet recorded in the ledger, is not sent twice.
func NewWriter(send Sender, ledger Ledger, known map[string]bool) *Writer {
	w := &Writer{send: send, ledger: ledger, written: map[string]bool{}, inJournal: map[string]bool{}}
	for k := range known {
		w.inJournal[k] = true
	}
	return w
}

// Key is the identity of a note.
func Key(attemptID, findingID string) string { return attemptID + "\x00" + findingID }

// Offer writes the note of finding f of attempt a unless it was written
// before. It reports whether a note was sent.
func (w *Writer) Offer(a *domain.Attempt, f domain.Finding) bool {
	k := Key(a.ID, f.ID)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written[k] {
		return false
	}
	if w.inJournal[k] {
		w.written[k] = true
		_ = w.ledger.RecordNote(a.ID, f.ID, f.MessageID)
		return false
	}
	if ok, err := w.ledger.NoteWritten(a.ID, f.ID); err == nil && ok {
		w.written[k] = true
		return false
	}
	msg, prio, fields := Entry(a, f)
	if err := w.send(msg, prio, fields); err != nil {
		w.Failed++
		return false
	}
	w.written[k] = true
	w.Written++
	_ = w.ledger.RecordNote(a.ID, f.ID, f.MessageID)
	return true
}

// Priority maps a rule severity to a journald PRIORITY (syslog levels).
func Priority(s domain.Severity) int {
	switch s {
	case domain.SeverityCritical:
		return 2
	case domain.SeverityError:
		return 3
	case domain.SeverityWarning:
		return 4
	}
	return 6
}

// Entry builds the journal entry of a note: MESSAGE is a one-line summary
// followed by the note; the fields identify the attempt, verdict, finding
// and rule.
func Entry(a *domain.Attempt, f domain.Finding) (message string, priority int, fields map[string]string) {
	unit := a.Unit
	if unit == "" {
		unit = a.Container
	}
	summary := fmt.Sprintf("%s: %s", unit, f.ID)
	if string(a.Verdict) != f.ID {
		summary += fmt.Sprintf(" (verdict %s)", a.Verdict)
	}
	summary += fmt.Sprintf(" in phase %s", f.Phase)
	if s := a.Shape.Summary(); s != "" {
		summary += ", shape " + s
	}
	message = summary + ". " + strings.TrimSpace(f.Note)
	fields = map[string]string{
		"SYSLOG_IDENTIFIER": Identifier,
		FieldAttempt:        a.ID,
		FieldVerdict:        string(a.Verdict),
		FieldFinding:        f.ID,
		FieldRule:           f.Rule,
	}
	if f.MessageID != "" {
		fields["MESSAGE_ID"] = f.MessageID
	}
	if a.Unit != "" {
		fields["OBJECT_SYSTEMD_UNIT"] = a.Unit
	}
	if a.InvocationID != "" {
		fields[FieldInvocationID] = a.InvocationID
	}
	return message, Priority(f.Severity), fields
}
