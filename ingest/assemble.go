package ingest

import (
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

// Defaults of Options.
const (
	DefaultMaxLineBytes  = 1 << 20 // bytes per reassembled line
	DefaultOrphanTimeout = 30 * time.Second
)

// Kinds of split lines.
const (
	kindNone    = iota
	kindConmon  // CONTAINER_PARTIAL_MESSAGE=true (podman/conmon, old docker)
	kindDocker  // CONTAINER_PARTIAL_ID / _ORDINAL / _LAST (docker ≥ 19.03)
	kindLineMax // _LINE_BREAK=line-max (journald stdout streams)
)

// partial is a line being reassembled.
type partial struct {
	key       string
	kind      int
	first     Record // record of the first piece (cursor, time, fields)
	seq       uint64 // Push number of the first piece, for output order
	buf       []byte
	pieces    int
	truncated bool // a piece's MESSAGE was null
	capped    bool // continuation of a line split at MaxLineBytes
	last      time.Time
	hasLast   bool
	endCursor string
	lineBreak string // _LINE_BREAK of the last piece
	ordinal   int    // docker: last CONTAINER_PARTIAL_ORDINAL seen
	gap       string // docker: why pieces look missing
}

// Assembler reassembles split lines and normalizes records into entries.
// Records that are not pieces of a split line pass through at once; a
// reassembled line is emitted when its last piece arrives and takes the
// cursor, time and fields of its first piece. Not safe for concurrent use.
//
// Split lines (see systemd.journal-fields(7) _LINE_BREAK, conmon
// src/ctr_logging.c, moby daemon/logger/journald):
//   - conmon/podman: CONTAINER_PARTIAL_MESSAGE=true pieces keyed by
//     CONTAINER_ID_FULL and PRIORITY (stdout/stderr); the next record of
//     that container and priority without the flag ends the line.
//   - docker: CONTAINER_PARTIAL_ID pieces until CONTAINER_PARTIAL_LAST=true.
//   - journald: _LINE_BREAK=line-max pieces keyed by _STREAM_ID; the next
//     record of the stream without line-max ends the line.
type Assembler struct {
	source  string
	max     int
	timeout time.Duration
	seq     uint64
	pending map[string]*partial
}

// NewAssembler returns an Assembler whose entries carry source as
// Entry.Source. Only opt.MaxLineBytes and opt.OrphanTimeout are used.
func NewAssembler(source string, opt Options) *Assembler {
	opt = opt.withDefaults()
	return &Assembler{source: source, max: opt.MaxLineBytes, timeout: opt.OrphanTimeout,
		pending: map[string]*partial{}}
}

// Pending is the number of lines waiting for more pieces.
func (a *Assembler) Pending() int { return len(a.pending) }

// Push adds one record and returns the entries it completes, in order: first
// orphans that timed out (no piece for OrphanTimeout of journal time before
// rec's __REALTIME_TIMESTAMP), then rec's own entry or the line it ends.
func (a *Assembler) Push(rec Record) []domain.Entry {
	a.seq++
	var out []domain.Entry
	now, hasNow := recordTime(rec)
	if hasNow && len(a.pending) > 0 {
		out = a.expire(now, out)
	}
	msg, hasMsg := rec["MESSAGE"]
	null := hasMsg && msg == nil
	host := string(rec["_HOSTNAME"])

	if id := rec["CONTAINER_PARTIAL_ID"]; len(id) > 0 {
		key := "d\x00" + host + "\x00" + string(id)
		p := a.open(key, kindDocker, rec)
		if n, err := strconv.Atoi(string(rec["CONTAINER_PARTIAL_ORDINAL"])); err == nil {
			if n != p.ordinal+1 && p.gap == "" {
				if p.ordinal == 0 {
					p.gap = fmt.Sprintf("first piece seen has ordinal %d", n)
				} else {
					p.gap = fmt.Sprintf("piece %d followed piece %d", n, p.ordinal)
				}
			}
			p.ordinal = n
		}
		out = a.add(p, rec, msg, null, now, hasNow, out)
		if string(rec["CONTAINER_PARTIAL_LAST"]) == "true" {
			reason := ""
			if p.gap != "" {
				reason = fmt.Sprintf("split line has missing pieces (%s)", p.gap)
			}
			out = a.finish(p, reason, out)
		}
		return out
	}
	if string(rec["CONTAINER_PARTIAL_MESSAGE"]) == "true" {
		p := a.open(conmonKey(rec, host), kindConmon, rec)
		return a.add(p, rec, msg, null, now, hasNow, out)
	}
	if string(rec["_LINE_BREAK"]) == "line-max" {
		p := a.open(streamKey(rec, host), kindLineMax, rec)
		return a.add(p, rec, msg, null, now, hasNow, out)
	}
	// A record that may end a pending line.
	if len(a.pending) > 0 {
		var p *partial
		if hasContainer(rec) {
			p = a.pending[conmonKey(rec, host)]
		}
		if p == nil && len(rec["_STREAM_ID"]) > 0 {
			p = a.pending[streamKey(rec, host)]
		}
		if p != nil {
			out = a.add(p, rec, msg, null, now, hasNow, out)
			return a.finish(p, "", out)
		}
	}
	if len(msg) <= a.max {
		return append(out, normalize(rec, msg, null, a.source))
	}
	// An oversized single record: split it like a long reassembled line.
	p := &partial{kind: kindNone, first: rec, seq: a.seq}
	out = a.add(p, rec, msg, null, now, hasNow, out)
	return a.finish(p, "", out)
}

// Flush emits every unfinished line as an orphan (FieldLogLoss set), in the
// order of their first pieces. Call it at the end of input.
func (a *Assembler) Flush() []domain.Entry {
	var ps []*partial
	for k, p := range a.pending {
		ps = append(ps, p)
		delete(a.pending, k)
	}
	return a.orphans(ps, "input ended before the last piece", nil)
}

func hasContainer(rec Record) bool {
	return len(rec["CONTAINER_ID_FULL"]) > 0 || len(rec["CONTAINER_ID"]) > 0
}

func conmonKey(rec Record, host string) string {
	id := rec["CONTAINER_ID_FULL"]
	if len(id) == 0 {
		id = rec["CONTAINER_ID"]
	}
	if len(id) == 0 {
		id = append([]byte("pid:"), rec["_PID"]...)
	}
	return "c\x00" + host + "\x00" + string(id) + "\x00" + string(rec["PRIORITY"])
}

func streamKey(rec Record, host string) string {
	if id := rec["_STREAM_ID"]; len(id) > 0 {
		return "s\x00" + host + "\x00" + string(id)
	}
	return "s\x00" + host + "\x00" + string(rec["_SYSTEMD_UNIT"]) + "\x00" + string(rec["_PID"])
}

// open returns the pending line of key, starting one at rec if none.
func (a *Assembler) open(key string, kind int, rec Record) *partial {
	if p := a.pending[key]; p != nil {
		return p
	}
	p := &partial{key: key, kind: kind, first: rec, seq: a.seq}
	a.pending[key] = p
	return p
}

// add appends one piece to p, emitting a capped entry whenever the line
// grows beyond the size cap.
func (a *Assembler) add(p *partial, rec Record, msg []byte, null bool, now time.Time, hasNow bool, out []domain.Entry) []domain.Entry {
	p.pieces++
	p.truncated = p.truncated || null
	p.buf = append(p.buf, msg...)
	if hasNow {
		p.last, p.hasLast = now, true
	}
	p.endCursor = string(rec["__CURSOR"])
	p.lineBreak = string(rec["_LINE_BREAK"])
	for len(p.buf) > a.max {
		cut := a.max
		for cut > a.max-utf8.UTFMax && cut > 0 && !utf8.RuneStart(p.buf[cut]) {
			cut--
		}
		e := a.entry(p, p.buf[:cut], "")
		e.Fields[FieldLineCapped] = fmt.Sprintf("line longer than %d bytes, split into several entries", a.max)
		out = append(out, e)
		p.buf = append(p.buf[:0], p.buf[cut:]...)
		p.first, p.pieces, p.capped, p.truncated = rec, 1, true, null
	}
	return out
}

// finish emits p's line and forgets it.
func (a *Assembler) finish(p *partial, reason string, out []domain.Entry) []domain.Entry {
	if p.key != "" {
		delete(a.pending, p.key)
	}
	if p.pieces == 1 && p.kind == kindNone && !p.capped && reason == "" {
		return append(out, normalize(p.first, p.buf, p.truncated, a.source))
	}
	e := a.entry(p, p.buf, reason)
	if p.capped {
		e.Fields[FieldLineCapped] = fmt.Sprintf("end of a line longer than %d bytes", a.max)
	}
	return append(out, e)
}

// entry builds the Entry of p with text msg.
func (a *Assembler) entry(p *partial, msg []byte, reason string) domain.Entry {
	e := normalize(p.first, msg, p.truncated, a.source)
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	delete(e.Fields, "CONTAINER_PARTIAL_MESSAGE")
	delete(e.Fields, "CONTAINER_PARTIAL_ORDINAL")
	delete(e.Fields, "CONTAINER_PARTIAL_LAST")
	if p.kind == kindLineMax {
		if p.lineBreak != "" {
			e.Fields["_LINE_BREAK"] = p.lineBreak
		} else {
			delete(e.Fields, "_LINE_BREAK")
		}
	}
	if p.pieces > 1 || reason != "" {
		e.Fields[FieldPieces] = strconv.Itoa(p.pieces)
		if p.endCursor != "" && p.endCursor != e.Cursor {
			e.Fields[FieldEndCursor] = p.endCursor
		}
	}
	if reason != "" {
		e.Fields[FieldLogLoss] = reason
	}
	return e
}

// expire emits the pending lines whose last piece is older than the orphan
// timeout at journal time now.
func (a *Assembler) expire(now time.Time, out []domain.Entry) []domain.Entry {
	var ps []*partial
	for k, p := range a.pending {
		if p.hasLast && now.Sub(p.last) > a.timeout {
			ps = append(ps, p)
			delete(a.pending, k)
		}
	}
	return a.orphans(ps, fmt.Sprintf("no further piece within %s", a.timeout), out)
}

// orphans emits ps as log-loss entries in first-piece order.
func (a *Assembler) orphans(ps []*partial, why string, out []domain.Entry) []domain.Entry {
	sort.Slice(ps, func(i, j int) bool { return ps[i].seq < ps[j].seq })
	for _, p := range ps {
		s := "s"
		if p.pieces == 1 {
			s = ""
		}
		reason := fmt.Sprintf("partial line not reassembled (%d piece%s, %d bytes): %s", p.pieces, s, len(p.buf), why)
		p.key = "" // already removed
		out = a.finish(p, reason, out)
	}
	return out
}
