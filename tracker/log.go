package tracker

import "github.com/llmfleet/analyzer/domain"

// logBuf keeps an attempt's own lines for the log viewer: the first
// domain.LogHead (the boot) and a sliding window of the last domain.LogTail
// (the death), each part within domain.LogBytes of message text, so an
// attempt that serves for weeks holds a bounded log.
type logBuf struct {
	head      []domain.LogLine
	headBytes int
	headFull  bool
	tail      []domain.LogLine // tail[start:] is the window
	start     int
	tailBytes int
	total     int
}

func (b *logBuf) add(ev domain.Evidence) {
	l := domain.LogLine{Seq: b.total, Time: ev.Time, Cursor: ev.Cursor, Message: ev.Message}
	b.total++
	if !b.headFull {
		if len(b.head) < domain.LogHead && b.headBytes+len(l.Message) <= domain.LogBytes {
			b.head = append(b.head, l)
			b.headBytes += len(l.Message)
			return
		}
		b.headFull = true
	}
	b.tail = append(b.tail, l)
	b.tailBytes += len(l.Message)
	for len(b.tail)-b.start > domain.LogTail || (b.tailBytes > domain.LogBytes && len(b.tail)-b.start > 1) {
		b.tailBytes -= len(b.tail[b.start].Message)
		b.tail[b.start] = domain.LogLine{}
		b.start++
	}
	if b.start > domain.LogTail {
		// Move the window to the front now and then, so the array stays
		// about twice the window.
		n := copy(b.tail, b.tail[b.start:])
		clear(b.tail[n:])
		b.tail, b.start = b.tail[:n], 0
	}
}

// snapshot is the log as stored: the head while the attempt runs (the
// window still moves), head and window once it has ended. The head is
// shared, not copied: it only grows.
func (b *logBuf) snapshot(ended bool) *domain.AttemptLog {
	if b.total == 0 {
		return nil
	}
	lines := b.head[:len(b.head):len(b.head)]
	if ended && len(b.tail) > b.start {
		lines = append(lines, b.tail[b.start:]...)
	}
	return &domain.AttemptLog{Lines: lines, Total: b.total}
}
