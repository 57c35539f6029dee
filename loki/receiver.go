package loki

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/web/httpauth"
)

// PushPath is where Loki, and so the analyzer, accepts pushes.
const PushPath = "/loki/api/v1/push"

// Sink takes the entries of a push (pipeline.Live has it).
type Sink interface {
	// Add queues entries, in order; it fails (without queuing any) when
	// the sink is saturated.
	Add(entries []domain.Entry) error
	// Saturated reports whether Add would refuse entries now.
	Saturated() bool
	// RequestFlush asks for the queued entries to be judged and saved soon.
	RequestFlush()
}

// ReceiverOptions configures NewReceiver.
type ReceiverOptions struct {
	// Sink receives the entries (required).
	Sink Sink
	// Token, when set, must be sent as "Authorization: Bearer TOKEN".
	Token string
	// MaxBytes limits a body as received and after decompression
	// (default DefaultMaxBytes, 10 MiB).
	MaxBytes int64
	// Ingest tunes line reassembly (MaxLineBytes, OrphanTimeout).
	Ingest ingest.Options
	// DedupeRecords is how many recent records are remembered to drop a
	// record pushed twice (a client retrying a batch the analyzer had
	// taken); default 100000, negative disables.
	DedupeRecords int
	// IdleFlush: a host that sent nothing for this long has its unfinished
	// split lines emitted as log loss by Run (default 2 × OrphanTimeout).
	IdleFlush time.Duration
	// Metrics counts requests, entries and refusals; nil counts nothing.
	Metrics ReceiverMetrics
	Logger  *slog.Logger
	// Now is the wall clock (tests); default time.Now.
	Now func() time.Time
	// MaxEntries caps the entries of one push (413 above; default
	// DefaultMaxEntries): a body of tiny entries costs far more memory
	// decoded than sent.
	MaxEntries int
	// MaxHosts caps the hosts whose split lines are being reassembled
	// (default DefaultMaxHosts). Past it the least recently pushing host is
	// evicted: its unfinished lines are emitted as log loss, and
	// ReceiverMetrics.HostsEvicted counts it. A host idle for IdleFlush is
	// dropped too.
	MaxHosts int
	// MaxConcurrent caps the pushes decoded at once (default 2); more are
	// answered 429 at once, so that parallel large pushes cannot add up.
	MaxConcurrent int
}

// Receiver serves POST /loki/api/v1/push. It is safe for concurrent use;
// requests are converted one at a time so that their entries reach the sink
// in order.
type Receiver struct {
	opts ReceiverOptions

	mu    sync.Mutex
	hosts map[string]*hostState
	lru   *list.List // of *hostState, most recently pushing first
	seen  *recentSet
	slots chan struct{} // one per push being decoded (MaxConcurrent)
}

// DefaultMaxHosts is the default of ReceiverOptions.MaxHosts: a fleet far
// larger than one analyzer watches, while a push of made-up host names
// cannot hold more than a few MiB of assemblers.
const DefaultMaxHosts = 4096

type hostState struct {
	host string
	asm  *ingest.Assembler
	last time.Time // wall clock of the last record
	elem *list.Element
}

// NewReceiver returns the push handler.
func NewReceiver(opts ReceiverOptions) *Receiver {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.DedupeRecords == 0 {
		opts.DedupeRecords = 100000
	}
	if opts.Ingest.OrphanTimeout <= 0 {
		opts.Ingest.OrphanTimeout = ingest.DefaultOrphanTimeout
	}
	if opts.IdleFlush <= 0 {
		opts.IdleFlush = 2 * opts.Ingest.OrphanTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxHosts <= 0 {
		opts.MaxHosts = DefaultMaxHosts
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2
	}
	rv := &Receiver{opts: opts, hosts: map[string]*hostState{}, lru: list.New(), slots: make(chan struct{}, opts.MaxConcurrent)}
	if opts.DedupeRecords > 0 {
		rv.seen = newRecentSet(opts.DedupeRecords)
	}
	return rv
}

// ServeHTTP answers 204 when the entries were queued, 400 for malformed
// data, 401 without the token, 405 for another method, 413 over the size
// or entry limit, 415 for a content type that is neither JSON nor
// protobuf, and 429 (with Retry-After) when the pipeline is saturated.
// As Loki does, a stream whose labels break a label limit (CheckLabelLimits)
// is refused with 400 naming the limit while the push's other streams are
// taken; so is a malformed entry, and the rest is taken (counted in
// analyzer_ingest_lines_skipped_total{reason="malformed"}). Every refusal
// is counted in analyzer_ingest_errors_total.
func (rv *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := rv.opts.Metrics
	fail := func(status int, reason, msg string) {
		m.IngestError(domain.IngestSourcePush, reason)
		m.PushRequest(status)
		if status == http.StatusUnauthorized {
			httpauth.Unauthorized(w)
			return
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, msg, status)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, domain.IngestErrMethod, "use POST")
		return
	}
	if rv.opts.Token != "" && !httpauth.BearerOK(r, rv.opts.Token) {
		fail(http.StatusUnauthorized, domain.IngestErrUnauthorized, httpauth.UnauthorizedBody)
		return
	}
	if rv.opts.Sink.Saturated() {
		fail(http.StatusTooManyRequests, domain.IngestErrSaturated, "the analyzer's pipeline is saturated, retry later")
		return
	}
	select {
	case rv.slots <- struct{}{}:
		defer func() { <-rv.slots }()
	default:
		fail(http.StatusTooManyRequests, domain.IngestErrSaturated, "other pushes are being decoded, retry later")
		return
	}
	d, n, rerr := ReadRequest(r, DecodeLimits{MaxBytes: rv.opts.MaxBytes, MaxEntries: rv.opts.MaxEntries})
	m.IngestBytes(domain.IngestSourcePush, n)
	if rerr != nil {
		rv.opts.Logger.Debug("loki push refused", "remote", r.RemoteAddr, "status", rerr.Status, "err", rerr.Err)
		fail(rerr.Status, rerr.Reason, rerr.Error())
		return
	}
	status, reason, err := rv.feed(r.Context(), d)
	if err != nil {
		fail(status, reason, err.Error())
		return
	}
	if len(d.Errors) > 0 {
		m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipMalformed, d.Skipped)
		first := d.Errors[0]
		rv.opts.Logger.Debug("loki push: entries skipped", "remote", r.RemoteAddr, "skipped", d.Skipped, "first", first.Err)
		fail(first.Status, first.Reason, fmt.Sprintf("%v (%d entries skipped, the others taken)", first.Err, d.Skipped))
		return
	}
	m.PushRequest(http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

// entryRef is one entry of a Decoded, by stream and index, with its time.
type entryRef struct {
	t      int64 // Unix µs, as __REALTIME_TIMESTAMP keeps it
	si, ei int32
}

// pushRecords yields the records of a push in time order. Records are
// built one at a time, and a stream's fields live until its last entry:
// a push of 100,000 one-line streams never holds 100,000 records at once.
type pushRecords struct {
	d    *Decoded
	refs []entryRef
	sfs  []*streamFields
	left []int32 // entries of each stream not yet built
}

func newPushRecords(d *Decoded) *pushRecords {
	p := &pushRecords{d: d, sfs: make([]*streamFields, len(d.Streams)), left: make([]int32, len(d.Streams))}
	for si := range d.Streams {
		es := d.Streams[si].Entries
		p.left[si] = int32(len(es))
		for ei := range es {
			p.refs = append(p.refs, entryRef{t: es[ei].Timestamp.UnixMicro(), si: int32(si), ei: int32(ei)})
		}
	}
	// A batch groups entries by stream, the journal interleaves them.
	sort.SliceStable(p.refs, func(i, j int) bool { return p.refs[i].t < p.refs[j].t })
	return p
}

// record builds the record of refs[i].
func (p *pushRecords) record(i int) ingest.Record {
	r := p.refs[i]
	st := &p.d.Streams[r.si]
	sf := p.sfs[r.si]
	if sf == nil {
		sf = newStreamFields(st.Labels)
		p.sfs[r.si] = sf
	}
	rec := recordOf(sf, &st.Entries[r.ei])
	if p.left[r.si]--; p.left[r.si] == 0 {
		p.sfs[r.si] = nil
	}
	return rec
}

var errSaturated = errors.New("the analyzer's pipeline is saturated, retry later")

// feed takes the records of one request in time order, drops records seen
// before, reassembles split lines per host and queues the entries. A
// request that ends (the client left, the server stops) ends it with
// nothing queued.
func (rv *Receiver) feed(ctx context.Context, d *Decoded) (int, string, error) {
	m := rv.opts.Metrics
	recs := newPushRecords(d)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	// Check again under the lock: another request may have filled the
	// queue, and the assemblers must not take records that are refused.
	if rv.opts.Sink.Saturated() {
		m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipSaturated, len(recs.refs))
		return http.StatusTooManyRequests, domain.IngestErrSaturated, errSaturated
	}
	now := rv.opts.Now()
	entries := make([]domain.Entry, 0, len(recs.refs))
	var keys []string
	local := map[string]bool{}
	dups, empty, evicted := 0, 0, 0
	for i := range recs.refs {
		if i%1024 == 0 && ctx.Err() != nil {
			// Records before i went into assemblers: as for a refused
			// Add, a retry of the push is taken again (keys not kept).
			return http.StatusServiceUnavailable, domain.IngestErrReadBody, context.Cause(ctx)
		}
		rec := recs.record(i)
		if len(bytes.TrimSpace(rec["MESSAGE"])) == 0 && len(rec["MESSAGE_ID"]) == 0 {
			empty++ // nothing for the tracker to go by
			continue
		}
		host := rec["_HOSTNAME"] // not made a string: 2 KB a record
		if rv.seen != nil {
			key := dedupeKey(host, rec["__CURSOR"])
			if rv.seen.has(key) || local[key] {
				dups++
				continue
			}
			local[key] = true
			keys = append(keys, key)
		}
		hs, lost := rv.host(host, now)
		if lost != nil {
			evicted++
			entries = append(entries, lost...)
		}
		entries = append(entries, hs.asm.Push(rec)...)
	}
	if evicted > 0 {
		m.HostsEvicted(evicted)
	}
	m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipDuplicate, dups)
	m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipEmpty, empty)
	if len(entries) > 0 {
		if err := rv.opts.Sink.Add(entries); err != nil {
			// The records went into the assemblers already; forget them so
			// that the client's retry is taken again.
			m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipSaturated, len(entries))
			return http.StatusTooManyRequests, domain.IngestErrPipeline, err
		}
		m.IngestEntries(domain.IngestSourcePush, len(entries))
	}
	for _, k := range keys {
		rv.seen.add(k)
	}
	rv.opts.Sink.RequestFlush()
	return 0, "", nil
}

// host returns the state of host, marked as just used; when a new host
// evicts the least recently used one, lost is that one's unfinished lines
// (non-nil, maybe empty). Called with rv.mu held.
func (rv *Receiver) host(host []byte, now time.Time) (hs *hostState, lost []domain.Entry) {
	if hs = rv.hosts[string(host)]; hs != nil {
		hs.last = now
		rv.lru.MoveToFront(hs.elem)
		return hs, nil
	}
	name := string(host)
	if rv.lru.Len() >= rv.opts.MaxHosts {
		// The least recently pushing host makes room; its assembler,
		// flushed, serves the new one.
		hs = rv.lru.Back().Value.(*hostState)
		lost = append([]domain.Entry{}, hs.asm.Reuse("loki:"+name)...)
		delete(rv.hosts, hs.host)
		hs.host, hs.last = name, now
		rv.lru.MoveToFront(hs.elem)
	} else {
		hs = &hostState{host: name, asm: ingest.NewAssembler("loki:"+name, rv.opts.Ingest), last: now}
		hs.elem = rv.lru.PushFront(hs)
	}
	rv.hosts[name] = hs
	return hs, lost
}

func (rv *Receiver) drop(hs *hostState) {
	rv.lru.Remove(hs.elem)
	delete(rv.hosts, hs.host)
}

// Hosts is the number of hosts whose state the receiver holds.
func (rv *Receiver) Hosts() int {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return rv.lru.Len()
}

// dedupeKey identifies a record for recentSet in a fixed 16 bytes,
// whatever the length of its host and cursor.
func dedupeKey(host, cursor []byte) string {
	h := sha256.New()
	h.Write(host)
	h.Write([]byte{0})
	h.Write(cursor)
	return string(h.Sum(nil)[:16])
}

// FlushIdle emits, as log loss, the unfinished split lines of hosts that
// sent nothing since before now - idle, queues them, and forgets those
// hosts (a host that pushes again starts afresh).
func (rv *Receiver) FlushIdle(idle time.Duration) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	now := rv.opts.Now()
	var entries []domain.Entry
	// The list is in order of use: the idle hosts are at its back.
	for e := rv.lru.Back(); e != nil; {
		hs := e.Value.(*hostState)
		if now.Sub(hs.last) < idle {
			break
		}
		e = e.Prev()
		entries = append(entries, hs.asm.Flush()...)
		rv.drop(hs)
	}
	if len(entries) == 0 {
		return
	}
	if err := rv.opts.Sink.Add(entries); err != nil {
		rv.opts.Metrics.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipSaturated, len(entries))
		return
	}
	rv.opts.Metrics.IngestEntries(domain.IngestSourcePush, len(entries))
	rv.opts.Sink.RequestFlush()
}

// Run flushes the split lines of idle hosts every few seconds until ctx ends.
func (rv *Receiver) Run(ctx context.Context) {
	t := time.NewTicker(min(rv.opts.IdleFlush/4+time.Millisecond, 5*time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rv.FlushIdle(rv.opts.IdleFlush)
		}
	}
}

// recentSet remembers the last n keys (FIFO).
type recentSet struct {
	keys map[string]struct{}
	ring []string
	next int
}

func newRecentSet(n int) *recentSet {
	return &recentSet{keys: make(map[string]struct{}, n), ring: make([]string, n)}
}

func (s *recentSet) has(k string) bool {
	_, ok := s.keys[k]
	return ok
}

func (s *recentSet) add(k string) {
	if _, ok := s.keys[k]; ok {
		return
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.keys, old)
	}
	s.ring[s.next] = k
	s.keys[k] = struct{}{}
	s.next = (s.next + 1) % len(s.ring)
}
