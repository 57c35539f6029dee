package loki

import (
	"bytes"
	"context"
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
	// MaxEntries caps the entries of one push (413 above; default 100000):
	// a body of tiny entries costs far more memory decoded than sent.
	MaxEntries int
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
	seen  *recentSet
	slots chan struct{} // one per push being decoded (MaxConcurrent)
}

type hostState struct {
	asm  *ingest.Assembler
	last time.Time // wall clock of the last record
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
		opts.MaxEntries = 100000
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 2
	}
	rv := &Receiver{opts: opts, hosts: map[string]*hostState{}, slots: make(chan struct{}, opts.MaxConcurrent)}
	if opts.DedupeRecords > 0 {
		rv.seen = newRecentSet(opts.DedupeRecords)
	}
	return rv
}

// ServeHTTP answers 204 when the entries were queued, 400 for malformed
// data, 401 without the token, 405 for another method, 413 over the size
// limit, 415 for a content type that is neither JSON nor protobuf, and 429
// (with Retry-After) when the pipeline is saturated. Every refusal is
// counted in analyzer_ingest_errors_total.
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
	req, n, rerr := DecodeRequest(r, rv.opts.MaxBytes)
	m.IngestBytes(domain.IngestSourcePush, n)
	if rerr != nil {
		rv.opts.Logger.Debug("loki push refused", "remote", r.RemoteAddr, "status", rerr.Status, "err", rerr.Err)
		fail(rerr.Status, rerr.Reason, rerr.Error())
		return
	}
	total := 0
	for si := range req.Streams {
		total += len(req.Streams[si].Entries)
	}
	if total > rv.opts.MaxEntries {
		fail(http.StatusRequestEntityTooLarge, domain.IngestErrTooLarge,
			fmt.Sprintf("%d entries in one push, more than %d: send smaller batches", total, rv.opts.MaxEntries))
		return
	}
	recs := make([]ingest.Record, 0, min(total, 4096))
	for si := range req.Streams {
		s := &req.Streams[si]
		labels, err := ParseLabels(s.Labels)
		if err != nil {
			fail(http.StatusBadRequest, domain.IngestErrLabels, err.Error())
			return
		}
		fields := StreamFields(labels)
		for ei := range s.Entries {
			recs = append(recs, Record(fields, &s.Entries[ei]))
		}
	}
	status, reason, err := rv.feed(recs)
	if err != nil {
		fail(status, reason, err.Error())
		return
	}
	m.PushRequest(http.StatusNoContent)
	w.WriteHeader(http.StatusNoContent)
}

var errSaturated = errors.New("the analyzer's pipeline is saturated, retry later")

// feed orders the records of one request by time (a batch groups entries
// by stream, the journal interleaves them), drops records seen before,
// reassembles split lines per host and queues the entries.
func (rv *Receiver) feed(recs []ingest.Record) (int, string, error) {
	m := rv.opts.Metrics
	sort.SliceStable(recs, func(i, j int) bool { return recordTime(recs[i]).Before(recordTime(recs[j])) })
	rv.mu.Lock()
	defer rv.mu.Unlock()
	// Check again under the lock: another request may have filled the
	// queue, and the assemblers must not take records that are refused.
	if rv.opts.Sink.Saturated() {
		m.LinesSkipped(domain.IngestSourcePush, domain.IngestSkipSaturated, len(recs))
		return http.StatusTooManyRequests, domain.IngestErrSaturated, errSaturated
	}
	now := rv.opts.Now()
	var entries []domain.Entry
	var keys []string
	local := map[string]bool{}
	dups, empty := 0, 0
	for _, rec := range recs {
		if len(bytes.TrimSpace(rec["MESSAGE"])) == 0 && len(rec["MESSAGE_ID"]) == 0 {
			empty++ // nothing for the tracker to go by
			continue
		}
		host := string(rec["_HOSTNAME"])
		if rv.seen != nil {
			key := host + "\x00" + string(rec["__CURSOR"])
			if rv.seen.has(key) || local[key] {
				dups++
				continue
			}
			local[key] = true
			keys = append(keys, key)
		}
		hs := rv.hosts[host]
		if hs == nil {
			hs = &hostState{asm: ingest.NewAssembler("loki:"+host, rv.opts.Ingest)}
			rv.hosts[host] = hs
		}
		hs.last = now
		entries = append(entries, hs.asm.Push(rec)...)
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

// FlushIdle emits, as log loss, the unfinished split lines of hosts that
// sent nothing since before now - idle, and queues them.
func (rv *Receiver) FlushIdle(idle time.Duration) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	now := rv.opts.Now()
	var entries []domain.Entry
	for _, hs := range rv.hosts {
		if hs.asm.Pending() > 0 && now.Sub(hs.last) >= idle {
			entries = append(entries, hs.asm.Flush()...)
		}
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
