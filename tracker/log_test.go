package tracker

import (
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

func TestLogBufKeepsHeadAndTail(t *testing.T) {
	var b logBuf
	n := domain.LogHead + 3*domain.LogTail + 7
	for i := range n {
		b.add(domain.Evidence{Message: "line " + strings.Repeat("x", i%5)})
	}
	open := b.snapshot(false)
	if open.Total != n || len(open.Lines) != domain.LogHead {
		t.Fatalf("running: %d lines of %d, want the head (%d)", len(open.Lines), open.Total, domain.LogHead)
	}
	done := b.snapshot(true)
	if len(done.Lines) != domain.LogHead+domain.LogTail {
		t.Fatalf("ended: %d lines, want %d", len(done.Lines), domain.LogHead+domain.LogTail)
	}
	if first, last := done.Lines[domain.LogHead].Seq, done.Lines[len(done.Lines)-1].Seq; first != n-domain.LogTail || last != n-1 {
		t.Errorf("tail holds lines %d..%d, want %d..%d", first, last, n-domain.LogTail, n-1)
	}
	if cap(b.tail) > 4*domain.LogTail {
		t.Errorf("tail array grew to %d", cap(b.tail))
	}
}

// Long lines fill the byte cap before the line cap: each part stays
// within domain.LogBytes, and the newest line is always kept.
func TestLogBufByteCap(t *testing.T) {
	var b logBuf
	big := strings.Repeat("y", 64<<10)
	for range 100 {
		b.add(domain.Evidence{Message: big})
	}
	l := b.snapshot(true)
	if l.Total != 100 {
		t.Fatalf("total %d", l.Total)
	}
	head, tail := 0, 0
	for _, x := range l.Lines {
		if x.Seq < 16 {
			head += len(x.Message)
		} else {
			tail += len(x.Message)
		}
	}
	if head > domain.LogBytes || tail > domain.LogBytes || l.Lines[len(l.Lines)-1].Seq != 99 {
		t.Errorf("head %d B, tail %d B, last seq %d", head, tail, l.Lines[len(l.Lines)-1].Seq)
	}
	var empty logBuf
	if empty.snapshot(true) != nil {
		t.Error("an attempt without lines has a log")
	}
}
