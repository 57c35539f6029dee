package ingest

import (
	"fmt"
	"maps"
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
	first     *flatRecord // record of the first piece (cursor, time, fields), owned
	seq       uint64      // Push number of the first piece, for output order
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
	rec     flatRecord // Push's record, reused
	texts   textCache
	keep    fieldSet // Options.Fields
}

// NewAssembler returns an Assembler whose entries carry source as
// Entry.Source. Only opt.MaxLineBytes, opt.OrphanTimeout and opt.Fields are
// used.
func NewAssembler(source string, opt Options) *Assembler {
	opt = opt.withDefaults()
	return &Assembler{source: source, max: opt.MaxLineBytes, timeout: opt.OrphanTimeout,
		pending: map[string]*partial{}, keep: newFieldSet(opt.Fields)}
}

// Pending is the number of lines waiting for more pieces.
func (a *Assembler) Pending() int { return len(a.pending) }

// Push adds one record and returns the entries it completes, in order: first
// orphans that timed out (no piece for OrphanTimeout of journal time before
// rec's __REALTIME_TIMESTAMP), then rec's own entry or the line it ends.
func (a *Assembler) Push(rec Record) []domain.Entry {
	a.rec.fromMap(rec, a.keep)
	return a.push(&a.rec, nil)
}

// push is Push on a parsed record, appending to out. rec's values need only
// stay valid during the call: a record kept for later is cloned.
func (a *Assembler) push(rec *flatRecord, out []domain.Entry) []domain.Entry {
	a.seq++
	now, hasNow := recordTime(rec)
	if hasNow && len(a.pending) > 0 {
		out = a.expire(now, out)
	}
	msg, hasMsg := rec.lookup(slotMessage)
	null := hasMsg && msg == nil

	if id := rec.get(slotPartialID); len(id) > 0 {
		key := "d\x00" + string(rec.get(slotHostname)) + "\x00" + string(id)
		p := a.open(key, kindDocker, rec)
		if n, err := strconv.Atoi(string(rec.get(slotPartialOrdinal))); err == nil {
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
		if string(rec.get(slotPartialLast)) == "true" {
			reason := ""
			if p.gap != "" {
				reason = fmt.Sprintf("split line has missing pieces (%s)", p.gap)
			}
			out = a.finish(p, reason, out)
		}
		return out
	}
	if string(rec.get(slotPartialMessage)) == "true" {
		p := a.open(conmonKey(rec), kindConmon, rec)
		return a.add(p, rec, msg, null, now, hasNow, out)
	}
	if string(rec.get(slotLineBreak)) == "line-max" {
		p := a.open(streamKey(rec), kindLineMax, rec)
		return a.add(p, rec, msg, null, now, hasNow, out)
	}
	// A record that may end a pending line.
	if len(a.pending) > 0 {
		var p *partial
		if hasContainer(rec) {
			p = a.pending[conmonKey(rec)]
		}
		if p == nil && len(rec.get(slotStreamID)) > 0 {
			p = a.pending[streamKey(rec)]
		}
		if p != nil {
			out = a.add(p, rec, msg, null, now, hasNow, out)
			return a.finish(p, "", out)
		}
	}
	if len(msg) <= a.max {
		return append(out, a.texts.normalizeAt(rec, msg, null, a.source, now, hasNow))
	}
	// An oversized single record: split it like a long reassembled line.
	p := &partial{kind: kindNone, first: rec.clone(), seq: a.seq}
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

// Reuse flushes a (see Flush) and readies it for another source, keeping
// its buffers: a receiver that evicts one host's assembler for a new host
// then allocates nothing for it.
func (a *Assembler) Reuse(source string) []domain.Entry {
	out := a.Flush()
	a.source, a.seq = source, 0
	return out
}

func hasContainer(rec *flatRecord) bool {
	return len(rec.get(slotContainerIDFull)) > 0 || len(rec.get(slotContainerID)) > 0
}

func conmonKey(rec *flatRecord) string {
	id := rec.get(slotContainerIDFull)
	if len(id) == 0 {
		id = rec.get(slotContainerID)
	}
	if len(id) == 0 {
		id = append([]byte("pid:"), rec.get(slotPID)...)
	}
	return "c\x00" + string(rec.get(slotHostname)) + "\x00" + string(id) + "\x00" + string(rec.get(slotPriority))
}

func streamKey(rec *flatRecord) string {
	host := string(rec.get(slotHostname))
	if id := rec.get(slotStreamID); len(id) > 0 {
		return "s\x00" + host + "\x00" + string(id)
	}
	return "s\x00" + host + "\x00" + string(rec.get(slotUnit)) + "\x00" + string(rec.get(slotPID))
}

// open returns the pending line of key, starting one at rec if none.
func (a *Assembler) open(key string, kind int, rec *flatRecord) *partial {
	if p := a.pending[key]; p != nil {
		return p
	}
	p := &partial{key: key, kind: kind, first: rec.clone(), seq: a.seq}
	a.pending[key] = p
	return p
}

// add appends one piece to p, emitting a capped entry whenever the line
// grows beyond the size cap.
func (a *Assembler) add(p *partial, rec *flatRecord, msg []byte, null bool, now time.Time, hasNow bool, out []domain.Entry) []domain.Entry {
	p.pieces++
	p.truncated = p.truncated || null
	p.buf = append(p.buf, msg...)
	if hasNow {
		p.last, p.hasLast = now, true
	}
	p.endCursor = string(rec.get(slotCursor))
	p.lineBreak = string(rec.get(slotLineBreak))
	var own *flatRecord // rec, cloned once it becomes p.first
	for len(p.buf) > a.max {
		cut := a.max
		for cut > a.max-utf8.UTFMax && cut > 0 && !utf8.RuneStart(p.buf[cut]) {
			cut--
		}
		e := a.entry(p, p.buf[:cut], "")
		e.Fields[FieldLineCapped] = fmt.Sprintf("line longer than %d bytes, split into several entries", a.max)
		out = append(out, e)
		p.buf = append(p.buf[:0], p.buf[cut:]...)
		if own == nil {
			own = rec.clone()
		}
		p.first, p.pieces, p.capped, p.truncated = own, 1, true, null
	}
	return out
}

// finish emits p's line and forgets it.
func (a *Assembler) finish(p *partial, reason string, out []domain.Entry) []domain.Entry {
	if p.key != "" {
		delete(a.pending, p.key)
	}
	if p.pieces == 1 && p.kind == kindNone && !p.capped && reason == "" {
		return append(out, a.texts.normalize(p.first, p.buf, p.truncated, a.source))
	}
	e := a.entry(p, p.buf, reason)
	if p.capped {
		e.Fields[FieldLineCapped] = fmt.Sprintf("end of a line longer than %d bytes", a.max)
	}
	return append(out, e)
}

// entry builds the Entry of p with text msg.
func (a *Assembler) entry(p *partial, msg []byte, reason string) domain.Entry {
	e := a.texts.normalize(p.first, msg, p.truncated, a.source)
	// Changed below: a map of its own, not the one entries share.
	e.Fields = maps.Clone(e.Fields)
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	delete(e.Fields, "CONTAINER_PARTIAL_MESSAGE")
	delete(e.Fields, "CONTAINER_PARTIAL_ORDINAL")
	delete(e.Fields, "CONTAINER_PARTIAL_LAST")
	if p.kind == kindLineMax {
		if p.lineBreak != "" && a.keep.inFields("_LINE_BREAK", slotLineBreak) {
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
