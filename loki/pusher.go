package loki

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/domain"
)

// PusherConfig configures NewPusher. Only URL is required.
type PusherConfig struct {
	// URL is Loki's push endpoint; a base URL without a path gets
	// /loki/api/v1/push appended.
	URL string
	// Username and Password send basic auth; BearerToken an
	// "Authorization: Bearer" header; TenantID the X-Scope-OrgID header.
	Username, Password, BearerToken, TenantID string
	// StructuredMetadata sends the attempt id, invocation id, rule, phase,
	// container and shape summary as structured metadata (Loki 3 with
	// allow_structured_metadata, schema v13) instead of in the line.
	StructuredMetadata bool
	// Job is the job label (default "analyzer").
	Job string
	// QueueSize bounds the findings waiting to be sent (default 10000);
	// when full, new findings are dropped and counted.
	QueueSize int
	// BatchSize is the most findings in one request (default 500);
	// BatchWait how long to wait for more before sending (default 1 s).
	BatchSize int
	BatchWait time.Duration
	// MinBackoff, MaxBackoff and MaxRetries govern retries after 429, 5xx
	// and network errors (defaults 500 ms, 30 s, 10).
	MinBackoff, MaxBackoff time.Duration
	MaxRetries             int
	// MaxAge is the oldest finding time Loki accepts (its
	// limits_config.reject_old_samples_max_age, default 168h); older
	// findings are not sent but counted as too_old. Default 168h less an
	// hour of margin; negative: send everything.
	MaxAge time.Duration
	// Timeout bounds one request (default 10 s).
	Timeout time.Duration
	Client  *http.Client
	// Metrics counts deliveries, failures, retries and the queue; nil
	// counts nothing.
	Metrics PusherMetrics
	Logger  *slog.Logger
}

// Pusher sends findings to Loki, one log line per (attempt, finding),
// from one goroutine (Start). Each (attempt, finding, rule) is offered at
// most once per process. Safe for concurrent use.
type Pusher struct {
	cfg PusherConfig
	url string

	mu      sync.Mutex
	queue   []item
	offered map[string]bool
	closing bool
	wake    chan struct{}
	stop    context.CancelFunc
	ctx     context.Context
	done    chan struct{}
	started bool
}

type item struct {
	labels string
	entry  push.Entry
}

// NewPusher checks the configuration and returns a pusher; call Start.
func NewPusher(cfg PusherConfig) (*Pusher, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("loki: --loki-url %q: want http(s)://host[:port][/loki/api/v1/push]", cfg.URL)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = PushPath
	}
	if cfg.Username == "" && cfg.Password != "" {
		return nil, errors.New("loki: a password needs a user name")
	}
	if cfg.BearerToken != "" && cfg.Username != "" {
		return nil, errors.New("loki: give either basic auth or a bearer token, not both")
	}
	if cfg.Job == "" {
		cfg.Job = "analyzer"
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 10000
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.BatchWait <= 0 {
		cfg.BatchWait = time.Second
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 500 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(30*time.Second, cfg.MinBackoff)
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = 10
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 167 * time.Hour
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pusher{cfg: cfg, url: u.String(), offered: map[string]bool{}, wake: make(chan struct{}, 1),
		ctx: ctx, stop: cancel, done: make(chan struct{})}, nil
}

// URL is the push endpoint in use.
func (p *Pusher) URL() string { return p.url }

// MaxAge is the oldest finding age the pusher sends (PusherConfig.MaxAge).
func (p *Pusher) MaxAge() time.Duration { return p.cfg.MaxAge }

// Start runs the sender goroutine.
func (p *Pusher) Start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return
	}
	p.started = true
	go p.run()
}

// Close stops taking findings, sends what is queued until ctx ends, then
// drops the rest (counted as "shutdown") and stops the sender.
func (p *Pusher) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closing = true
	started := p.started
	p.mu.Unlock()
	p.signal()
	if !started {
		p.dropAll(domain.LokiPushShutdown)
		return nil
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.stop()
		<-p.done
		return ctx.Err()
	}
}

// Pending is the number of findings waiting to be sent.
func (p *Pusher) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// Offer queues finding f of attempt a, unless that (attempt, finding, rule)
// was offered before in this process. It reports whether it was queued.
func (p *Pusher) Offer(a *domain.Attempt, f domain.Finding) bool {
	key := a.ID + "\x00" + f.ID + "\x00" + f.Rule
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.offered[key] || p.closing {
		return false
	}
	p.offered[key] = true
	if len(p.queue) >= p.cfg.QueueSize {
		p.cfg.Metrics.LokiFailed(domain.LokiPushQueueFull, 1)
		return false
	}
	p.queue = append(p.queue, item{labels: FormatLabels(p.streamLabels(a, f)), entry: p.entry(a, f)})
	p.cfg.Metrics.LokiQueue(len(p.queue))
	p.signal()
	return true
}

func (p *Pusher) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// streamLabels are the finding's stream labels: only low-cardinality ones.
func (p *Pusher) streamLabels(a *domain.Attempt, f domain.Finding) map[string]string {
	return map[string]string{
		"job": p.cfg.Job, "host": a.Host, "unit": a.Unit, "engine": a.Engine,
		"finding": f.ID, "verdict": string(a.Verdict), "severity": string(f.Severity),
	}
}

// FindingTime is the entry timestamp of a finding: its own time, else the
// attempt's end or start. It is deterministic, so that a retried push (or a
// second analyzer pushing the same finding) is the same entry to Loki.
func FindingTime(a *domain.Attempt, f domain.Finding) time.Time {
	for _, t := range []time.Time{f.Time, a.EndedAt, a.StartedAt} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Unix(0, 0)
}

// entry builds the finding's log line: the note, then (unless structured
// metadata is on) the high-cardinality details in logfmt after " | ".
func (p *Pusher) entry(a *domain.Attempt, f domain.Finding) push.Entry {
	note := strings.TrimSpace(f.Note)
	if note == "" {
		note = f.ID + " (" + f.Rule + ")"
	}
	note = strings.Join(strings.Fields(note), " ") // one line
	meta := [][2]string{
		{"attempt_id", a.ID}, {"invocation_id", a.InvocationID}, {"container", a.Container},
		{"rule", f.Rule}, {"phase", string(f.Phase)}, {"message_id", f.MessageID},
		{"shape", a.Shape.Summary()},
	}
	e := push.Entry{Timestamp: FindingTime(a, f)}
	if p.cfg.StructuredMetadata {
		e.Line = note
		for _, kv := range meta {
			if kv[1] != "" {
				e.StructuredMetadata = append(e.StructuredMetadata, push.LabelAdapter{Name: kv[0], Value: kv[1]})
			}
		}
		return e
	}
	var b strings.Builder
	b.WriteString(note)
	b.WriteString(" |")
	for _, kv := range meta {
		if kv[1] == "" {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(logfmtValue(kv[1]))
	}
	e.Line = b.String()
	return e
}

// logfmtValue quotes v when logfmt needs it.
func logfmtValue(v string) string {
	if v == "" || strings.ContainsAny(v, " \t\"=\\") || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return strconv.Quote(v)
	}
	return v
}

// run sends batches until Close.
func (p *Pusher) run() {
	defer close(p.done)
	for {
		batch, last := p.next()
		if len(batch) > 0 {
			p.send(batch)
		}
		if last {
			p.dropAll(domain.LokiPushShutdown)
			return
		}
	}
}

// next waits for findings and returns up to BatchSize of them, after
// BatchWait (at once when closing); last is set when the pusher is closing
// and the queue is empty, or when stopped.
func (p *Pusher) next() (batch []item, last bool) {
	var timer <-chan time.Time
	for {
		p.mu.Lock()
		if p.ctx.Err() != nil {
			p.mu.Unlock()
			return nil, true
		}
		n, closing := len(p.queue), p.closing
		if n > 0 && (closing || n >= p.cfg.BatchSize) {
			batch = p.take()
			p.mu.Unlock()
			return batch, false
		}
		p.mu.Unlock()
		if n == 0 && closing {
			return nil, true
		}
		if n > 0 && timer == nil {
			timer = time.After(p.cfg.BatchWait)
		}
		select {
		case <-p.wake:
		case <-timer:
			p.mu.Lock()
			batch = p.take()
			p.mu.Unlock()
			if len(batch) > 0 {
				return batch, false
			}
			timer = nil
		case <-p.ctx.Done():
			return nil, true
		}
	}
}

// take removes up to BatchSize items from the queue (p.mu held).
func (p *Pusher) take() []item {
	n := min(len(p.queue), p.cfg.BatchSize)
	batch := append([]item(nil), p.queue[:n]...)
	p.queue = append(p.queue[:0], p.queue[n:]...)
	p.cfg.Metrics.LokiQueue(len(p.queue))
	return batch
}

func (p *Pusher) dropAll(reason string) {
	p.mu.Lock()
	n := len(p.queue)
	p.queue = nil
	p.mu.Unlock()
	p.cfg.Metrics.LokiQueue(0)
	if n > 0 {
		p.cfg.Metrics.LokiFailed(reason, n)
		p.cfg.Logger.Warn("loki: findings not pushed", "count", n, "reason", reason)
	}
}

// buildRequest groups the batch into streams (in order of first
// appearance), entries sorted by time within a stream.
func buildRequest(batch []item) *push.PushRequest {
	idx := map[string]int{}
	req := &push.PushRequest{}
	for _, it := range batch {
		i, ok := idx[it.labels]
		if !ok {
			i = len(req.Streams)
			idx[it.labels] = i
			req.Streams = append(req.Streams, push.Stream{Labels: it.labels})
		}
		req.Streams[i].Entries = append(req.Streams[i].Entries, it.entry)
	}
	for i := range req.Streams {
		es := req.Streams[i].Entries
		sort.SliceStable(es, func(a, b int) bool { return es[a].Timestamp.Before(es[b].Timestamp) })
	}
	return req
}

// send pushes one batch, retrying 429, 5xx and network errors with
// exponential backoff with jitter (honouring Retry-After); another 4xx
// drops the batch, less what Loki says it kept of a partly rejected one.
// Findings older than MaxAge are not sent. The same body is sent on every
// try.
func (p *Pusher) send(batch []item) {
	m := p.cfg.Metrics
	if p.cfg.MaxAge > 0 {
		oldest := time.Now().Add(-p.cfg.MaxAge)
		keep := batch[:0]
		for _, it := range batch {
			if it.entry.Timestamp.Before(oldest) {
				continue
			}
			keep = append(keep, it)
		}
		if n := len(batch) - len(keep); n > 0 {
			m.LokiFailed(domain.LokiPushTooOld, n)
			p.cfg.Logger.Warn("loki: findings older than Loki accepts were not sent", "findings", n, "reason", "too_old",
				"max_age", p.cfg.MaxAge, "oldest_accepted", oldest.UTC().Format(time.RFC3339))
		}
		if batch = keep; len(batch) == 0 {
			return
		}
	}
	body, err := EncodeProtobuf(buildRequest(batch))
	if err != nil {
		m.LokiFailed(domain.LokiPushEncode, len(batch))
		p.cfg.Logger.Error("loki: encoding a push request failed", "err", err)
		return
	}
	backoff := p.cfg.MinBackoff
	for try := 0; ; try++ {
		status, retryAfter, answer, err := p.post(body)
		switch {
		case err == nil && status/100 == 2:
			m.LokiDelivered(len(batch))
			return
		case err == nil && status != http.StatusTooManyRequests && status/100 != 5:
			// Loki keeps the valid entries of a partly rejected push and
			// says how many it ignored.
			rejected := len(batch)
			if n, ok := ignoredEntries(answer); ok && n <= len(batch) {
				rejected = n
			}
			m.LokiDelivered(len(batch) - rejected)
			m.LokiFailed(domain.LokiPushRejected, rejected)
			p.cfg.Logger.Error("loki: push rejected", "status", status, "findings", len(batch), "rejected", rejected, "loki", answer)
			return
		}
		if try >= p.cfg.MaxRetries {
			m.LokiFailed(domain.LokiPushExhausted, len(batch))
			p.cfg.Logger.Error("loki: push failed after retries, findings dropped", "status", status, "err", err, "findings", len(batch), "loki", answer)
			return
		}
		// Equal jitter: half the backoff plus a random half, so pushers
		// that failed together do not retry together.
		wait := backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
		if retryAfter > 0 {
			// Loki's own wait wins over the backoff, within reason.
			wait = min(max(retryAfter, p.cfg.MinBackoff), maxRetryAfter)
		}
		m.LokiRetry()
		p.cfg.Logger.Warn("loki: push failed, retrying", "status", status, "err", err, "in", wait, "loki", answer)
		select {
		case <-time.After(wait):
		case <-p.ctx.Done():
			m.LokiFailed(domain.LokiPushShutdown, len(batch))
			return
		}
		backoff = min(2*backoff, p.cfg.MaxBackoff)
	}
}

// maxRetryAfter bounds the wait a Retry-After header can ask for.
const maxRetryAfter = 5 * time.Minute

// ignoredRE is the line Loki's ingester writes per stream with entries it
// refused ("user 'fake', total ignored: 3 out of 10 for stream: {...}";
// pkg/ingester/stream.go); the valid entries of the push are kept.
var ignoredRE = regexp.MustCompile(`total ignored: (\d+) out of \d+`)

// ignoredEntries returns how many entries Loki's answer says it ignored,
// summed over its streams.
func ignoredEntries(answer string) (int, bool) {
	ms := ignoredRE.FindAllStringSubmatch(answer, -1)
	if ms == nil {
		return 0, false
	}
	total := 0
	for _, m := range ms {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return 0, false
		}
		total += n
	}
	return total, true
}

// post sends body once and returns the status, any Retry-After (seconds
// or an HTTP date) and the start of Loki's answer (its error text).
func (p *Pusher) post(body []byte) (int, time.Duration, string, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "llmfleet-analyzer")
	if p.cfg.Username != "" {
		req.SetBasicAuth(p.cfg.Username, p.cfg.Password)
	}
	if p.cfg.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+p.cfg.BearerToken)
	}
	if p.cfg.TenantID != "" {
		req.Header.Set("X-Scope-OrgID", p.cfg.TenantID)
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		p.cfg.Metrics.LokiRequest("error")
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	p.cfg.Metrics.LokiRequest(strconv.Itoa(resp.StatusCode))
	var ra time.Duration
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			ra = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			ra = max(time.Until(t), 0)
		}
	}
	return resp.StatusCode, ra, strings.TrimSpace(strings.ToValidUTF8(string(head), "?")), nil
}
