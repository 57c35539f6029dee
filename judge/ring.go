package judge

import (
	"slices"

	"github.com/llmfleet/analyzer/domain"
)

// evidenceRing holds the last lines of an attempt in a circular buffer:
// a slice that drops its head reallocates every few lines, a tenth of the
// judge's allocation on a night ladder.
type evidenceRing struct {
	buf        []domain.Evidence
	start, len int
}

// push adds ev, keeping at most limit lines.
func (r *evidenceRing) push(ev domain.Evidence, limit int) {
	if limit <= 0 {
		return
	}
	if len(r.buf) != limit {
		r.buf, r.start, r.len = make([]domain.Evidence, limit), 0, 0
	}
	i := r.start + r.len
	if i >= limit {
		i -= limit
	}
	r.buf[i] = ev
	if r.len < limit {
		r.len++
	} else if r.start++; r.start == limit {
		r.start = 0
	}
}

// appendTo appends the lines held, oldest first, to dst.
func (r *evidenceRing) appendTo(dst []domain.Evidence) []domain.Evidence {
	dst = slices.Grow(dst, r.len)
	for k := range r.len {
		i := r.start + k
		if i >= len(r.buf) {
			i -= len(r.buf)
		}
		dst = append(dst, r.buf[i])
	}
	return dst
}

func (r *evidenceRing) reset() { r.start, r.len = 0, 0 }
