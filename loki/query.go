package loki

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/loki/pkg/push"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
)

// QueryRangePath is Loki's log query endpoint
// (https://grafana.com/docs/loki/latest/reference/loki-http-api/#query-logs-within-a-range-of-time).
const QueryRangePath = "/loki/api/v1/query_range"

// Defaults of QueryConfig.
const (
	DefaultQueryLimit = 5000 // entries per page: Loki's max_entries_limit_per_query
	// DefaultQueryMaxBytes caps one page's response body: 5000 journal
	// lines with their metadata are a few MB, and decoding a page costs
	// some three times its size.
	DefaultQueryMaxBytes = 16 << 20
	DefaultQueryTimeout  = 60 * time.Second
	DefaultQueryWindow   = 24 * time.Hour
	maxQueryErrors       = 10 // malformed entries described in QueryStats.Errors
	// maxSamePages is how many pages may start at one timestamp: Loki
	// answers the same query alike, so a page that starts where the last
	// one did either brings entries past the limit's doubling or nothing.
	maxSamePages = 64
)

// DefaultQuery selects the journal streams the shipped Alloy config
// (deploy/alloy/config.alloy) labels, the job name Promtail's and
// Alloy's journal examples use.
const DefaultQuery = `{job="systemd-journal"}`

// QueryConfig configures QueryRange.
type QueryConfig struct {
	// URL is the Loki base URL (http://HOST:3100) or the full query_range URL.
	URL string
	// Query is a LogQL log query, e.g. {job="systemd-journal"}.
	Query string
	// Start (inclusive) and End (exclusive) bound the entries' times.
	Start, End time.Time
	// Limit is the entries asked per page (default DefaultQueryLimit).
	Limit int
	// Window is the longest time range one request spans (default 24 h):
	// Loki refuses ranges over its max_query_length (721 h by default).
	Window time.Duration
	// Username and Password send basic auth; BearerToken an
	// "Authorization: Bearer" header (not both); TenantID X-Scope-OrgID.
	Username, Password, BearerToken, TenantID string
	// Timeout bounds one page's request and body (default 60 s).
	Timeout time.Duration
	// MaxBytes caps one page's response body (default
	// DefaultQueryMaxBytes, 16 MiB); a larger body is an error that names
	// the cap (lower Limit).
	MaxBytes int64
	// Client is the HTTP client (default a new one).
	Client *http.Client
}

// QueryStats is what QueryRange read.
type QueryStats struct {
	Pages     int   // responses read
	Bytes     int64 // response bytes read
	Entries   int64 // entries handed to fn
	Malformed int64 // entries or streams skipped as malformed
	Repeated  int64 // entries seen again at a page boundary and dropped
	// Excess counts entries past the asked limit in a page (Loki never
	// sends them): dropped unread.
	Excess int64
	// Lost counts the timestamps at which entries may be missing: more
	// than Limit entries shared one, and the query went on past it.
	Lost   int64
	Errors []string // the first malformed entries, described
}

func (s *QueryStats) malformed(format string, args ...any) {
	s.Malformed++
	if len(s.Errors) < maxQueryErrors {
		s.Errors = append(s.Errors, fmt.Sprintf(format, args...))
	}
}

// QueryError is a query_range request Loki refused: the status and the
// start of its error body.
type QueryError struct {
	Status int
	Body   string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("loki query_range: HTTP %d: %s", e.Status, e.Body)
}

// queryURL returns the query_range URL of a base or full URL.
func queryURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("loki url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("loki url %q: want http(s)://HOST[:PORT]", raw)
	}
	if !strings.HasSuffix(u.Path, QueryRangePath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + QueryRangePath
	}
	return u, nil
}

// QueryRange reads every log entry of cfg.Query between cfg.Start and
// cfg.End from Loki's query_range API, oldest first, and calls fn with each
// as a journal record, mapped from its stream labels and structured metadata
// exactly as a push is (StreamFields, Record). Pages are asked with
// direction=forward and limit; the next page starts at the last timestamp
// read (a request spans at most cfg.Window), and the entries of that timestamp already handed over are dropped
// by identity (labels, metadata, line), so that entries sharing a timestamp
// at a page boundary are neither lost nor repeated. A full page that brings
// nothing new (more than limit entries share its first timestamp) is asked
// again with twice the limit, up to max(Limit, 5000); past that the query
// goes on 1 ns later and counts the timestamp in Lost. Malformed entries are skipped and counted; a
// refused request (QueryError), a response over MaxBytes, a body that is
// not Loki's JSON, or an error from fn ends the query with an error.
func QueryRange(ctx context.Context, cfg QueryConfig, fn func(ingest.Record) error) (QueryStats, error) {
	var st QueryStats
	u, err := queryURL(cfg.URL)
	if err != nil {
		return st, err
	}
	if strings.TrimSpace(cfg.Query) == "" {
		return st, errors.New("loki query: empty LogQL query")
	}
	if cfg.Username == "" && cfg.Password != "" {
		return st, errors.New("loki query: a password without a user")
	}
	if cfg.BearerToken != "" && cfg.Username != "" {
		return st, errors.New("loki query: basic auth and a bearer token are exclusive")
	}
	if !cfg.Start.Before(cfg.End) {
		return st, fmt.Errorf("loki query: start %s is not before end %s", cfg.Start.UTC().Format(time.RFC3339), cfg.End.UTC().Format(time.RFC3339))
	}
	if cfg.Limit <= 0 {
		cfg.Limit = DefaultQueryLimit
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultQueryMaxBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultQueryTimeout
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultQueryWindow
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	limit := cfg.Limit
	maxLimit := max(cfg.Limit, DefaultQueryLimit) // Loki's max_entries_limit_per_query
	start := cfg.Start.UnixNano()
	end := cfg.End.UnixNano()
	var boundary map[string]bool // identities handed over at timestamp start
	same := 0                    // pages asked at this start
	for start < end {
		stop := end
		if w := cfg.Window.Nanoseconds(); end-start > w {
			stop = start + w
		}
		page, raw, n, err := queryPage(ctx, cfg, u, start, stop, limit, &st)
		st.Bytes += n
		if err != nil {
			return st, err
		}
		st.Pages++
		last := start
		fresh := 0
		repeats := 0 // entries at start already handed over
		next := map[string]bool{}
		for i := range page {
			e := &page[i]
			if e.ts == start && boundary[e.key] {
				st.Repeated++
				repeats++
				continue
			}
			if e.ts > last {
				last, next = e.ts, map[string]bool{}
			}
			if e.ts == last {
				next[e.key] = true
			}
			fresh++
			st.Entries++
			if err := fn(recordOf(e.fields, &e.entry)); err != nil {
				return st, err
			}
		}
		if raw < limit {
			// The window holds no more entries: on to the next one.
			start, boundary, limit, same = stop, nil, cfg.Limit, 0
			continue
		}
		if fresh == 0 && repeats < raw {
			// A full page with nothing new, and not only the entries of
			// timestamp start again (which a larger page moves past): the
			// rest lie before start, outside the window or are malformed.
			// Loki never answers so; asking again would loop.
			return st, fmt.Errorf("%w: page %d at %s brought %d entries, none new (%d repeated, the others before the asked start, outside the window or malformed)",
				ErrNoProgress, st.Pages, time.Unix(0, start).UTC().Format(time.RFC3339Nano), raw, repeats)
		}
		if same++; fresh == 0 && limit < maxLimit && same <= maxSamePages {
			// A full page of entries already read: more than limit entries
			// share timestamp start. Ask again with a larger page.
			limit = min(2*limit, maxLimit)
			continue
		}
		if fresh == 0 || same > maxSamePages {
			// Still nothing new at the largest page (or a server that keeps
			// inventing entries at one timestamp): go on past the
			// timestamp rather than loop.
			st.Lost++
			start, boundary, limit, same = start+1, nil, cfg.Limit, 0
			continue
		}
		if last == start {
			for k := range boundary {
				next[k] = true // all of them are at the same timestamp
			}
		} else {
			limit, same = cfg.Limit, 0
		}
		start, boundary = last, next
	}
	return st, nil
}

// ErrNoProgress ends a query whose server answers a full page that holds
// nothing at or after the asked start: asking again would loop.
var ErrNoProgress = errors.New("loki query_range: no progress")

// pageEntry is one entry of a page with the fields of its stream.
type pageEntry struct {
	ts     int64
	key    string // identity: a hash of stream labels, metadata, line
	fields *streamFields
	entry  push.Entry
}

// queryResponse is Loki's query_range answer for a log query.
type queryResponse struct {
	Status string `json:"status"`
	Data   struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	} `json:"data"`
}

type queryStream struct {
	Stream map[string]string `json:"stream"`
	Values []json.RawMessage `json:"values"`
}

// queryPage asks one page and returns its well-formed entries in time
// order (stable: within a timestamp, in the order of the response), the
// number of entries the response held (malformed ones too) and the bytes
// read.
func queryPage(ctx context.Context, cfg QueryConfig, u *url.URL, start, end int64, limit int, st *QueryStats) (out []pageEntry, raw int, n int64, err error) {
	q := url.Values{}
	q.Set("query", cfg.Query)
	q.Set("start", strconv.FormatInt(start, 10))
	q.Set("end", strconv.FormatInt(end, 10))
	q.Set("limit", strconv.Itoa(limit))
	q.Set("direction", "forward")
	pu := *u
	pu.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pu.String(), nil)
	if err != nil {
		return nil, 0, 0, err
	}
	// Loki 3 then returns structured metadata apart from the stream labels.
	req.Header.Set("X-Loki-Response-Encoding-Flags", "categorize-labels")
	req.Header.Set("Accept", "application/json")
	if cfg.Username != "" {
		req.SetBasicAuth(cfg.Username, cfg.Password)
	}
	if cfg.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
	}
	if cfg.TenantID != "" {
		req.Header.Set("X-Scope-OrgID", cfg.TenantID)
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("loki query_range: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, cfg.MaxBytes+1))
	n = int64(len(body))
	if err != nil {
		return nil, 0, n, fmt.Errorf("loki query_range: reading the response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		// Loki's error text, made printable: it goes to a terminal.
		msg := strings.Map(func(r rune) rune {
			if r < ' ' || r == 0x7f {
				return ' '
			}
			return r
		}, strings.ToValidUTF8(string(bytes.TrimSpace(body[:min(len(body), 512)])), "?"))
		return nil, 0, n, &QueryError{Status: resp.StatusCode, Body: msg}
	}
	if n > cfg.MaxBytes {
		return nil, 0, n, fmt.Errorf("loki query_range: response over %d bytes; ask fewer entries per page", cfg.MaxBytes)
	}
	out, raw, err = decodePage(body, start, end, limit, st)
	return out, raw, n, err
}

// decodePage reads one query_range response body: its well-formed entries
// with start <= time < end in time order, and the number of entries it
// held, at most limit (entries past it are counted in st.Excess, unread).
// Malformed streams and entries, and streams over Loki's label limits
// (CheckLabelLimits), are counted in st and skipped; a body that is not a
// successful streams result is an error.
func decodePage(body []byte, start, end int64, limit int, st *QueryStats) (out []pageEntry, raw int, err error) {
	var r queryResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, 0, fmt.Errorf("loki query_range: not Loki's JSON response: %w", err)
	}
	if r.Status != "success" {
		return nil, 0, fmt.Errorf("loki query_range: status %.40q", r.Status)
	}
	if r.Data.ResultType != "streams" {
		return nil, 0, fmt.Errorf("loki query_range: result type %.40q, want streams (a log query, not a metric query)", r.Data.ResultType)
	}
	for si, rs := range r.Data.Result {
		if raw >= limit {
			st.Excess++ // a stream (of at least one entry) past the limit
			continue
		}
		var s queryStream
		if err := json.Unmarshal(rs, &s); err != nil {
			st.malformed("stream %d: %v", si, err)
			continue
		}
		values := s.Values
		if n := limit - raw; len(values) > n {
			st.Excess += int64(len(values) - n)
			values = values[:n]
		}
		raw += len(values)
		labels := make(push.LabelsAdapter, 0, len(s.Stream))
		var lerr error
		for k, v := range s.Stream {
			if !ValidLabelName(k) {
				lerr = fmt.Errorf("label name %.60q", k)
			}
			labels = append(labels, push.LabelAdapter{Name: k, Value: v})
		}
		if lerr == nil {
			lerr = CheckLabelLimits(labels)
		}
		if lerr != nil {
			// Refused before any entry is read; its entries count.
			st.malformed("stream %d (%d entries): %v", si, len(values), lerr)
			st.Malformed += int64(max(len(values)-1, 0))
			continue
		}
		sort.Slice(labels, func(i, j int) bool { return labels[i].Name < labels[j].Name })
		sf := newStreamFields(labels)
		lkey := metaKey(labels)
		for vi, v := range values {
			e, err := parseValue(v)
			if err != nil {
				st.malformed("stream %d entry %d: %v", si, vi, err)
				continue
			}
			if e.ts < start || e.ts >= end {
				st.malformed("stream %d entry %d: time %d outside the asked range", si, vi, e.ts)
				continue
			}
			e.fields = sf
			e.key = entryKey(lkey, &e.entry)
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ts < out[j].ts })
	return out, raw, nil
}

// entryKey identifies an entry within a timestamp in 16 bytes: a hash of
// its stream's labels (lkey), metadata and line.
func entryKey(lkey string, e *push.Entry) string {
	h := sha256.New()
	h.Write([]byte(lkey))
	h.Write([]byte{0})
	h.Write([]byte(metaKey(e.StructuredMetadata)))
	h.Write([]byte{0})
	h.Write([]byte(e.Line))
	return string(h.Sum(nil)[:16])
}

// parseValue reads one entry of a stream's values: ["<ns>", "<line>"] or,
// with categorize-labels, ["<ns>", "<line>", {"structuredMetadata": {…},
// "parsed": {…}}] (parsed labels are a query's own, not the entry's).
func parseValue(raw json.RawMessage) (pageEntry, error) {
	var e pageEntry
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return e, err
	}
	if len(parts) < 2 || len(parts) > 3 {
		return e, fmt.Errorf("%d elements, want 2 or 3", len(parts))
	}
	var ns string
	if err := json.Unmarshal(parts[0], &ns); err != nil {
		return e, fmt.Errorf("timestamp: %v", err)
	}
	ts, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || ts < 0 {
		return e, fmt.Errorf("timestamp %.40q: not nanoseconds", ns)
	}
	if err := json.Unmarshal(parts[1], &e.entry.Line); err != nil {
		return e, fmt.Errorf("line: %v", err)
	}
	if len(parts) == 3 {
		var cat struct {
			StructuredMetadata map[string]string `json:"structuredMetadata"`
		}
		if err := json.Unmarshal(parts[2], &cat); err != nil {
			return e, fmt.Errorf("labels: %v", err)
		}
		for k, v := range cat.StructuredMetadata {
			if !ValidLabelName(k) {
				return e, fmt.Errorf("structured metadata name %.60q", k)
			}
			e.entry.StructuredMetadata = append(e.entry.StructuredMetadata, push.LabelAdapter{Name: k, Value: v})
		}
		sort.Slice(e.entry.StructuredMetadata, func(i, j int) bool {
			return e.entry.StructuredMetadata[i].Name < e.entry.StructuredMetadata[j].Name
		})
		if err := checkMetadata(e.entry.StructuredMetadata); err != nil {
			return e, err
		}
	}
	e.ts = ts
	e.entry.Timestamp = time.Unix(0, ts)
	return e, nil
}

func metaKey(ls push.LabelsAdapter) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(l.Value))
		b.WriteByte(',')
	}
	return b.String()
}

// ReadQuery reads the entries of a Loki query as ingest.ReadFile reads a
// file: each entry becomes a journal record through the push receiver's
// label mapping (QueryRange → Record), and one ingest.Assembler per host
// reassembles split lines, as the Receiver does; fn gets the entries in
// order. qs gets the query's own counts. Errors are QueryRange's and fn's.
func ReadQuery(ctx context.Context, cfg QueryConfig, qs *QueryStats, opt ingest.Options, fn func(domain.Entry) error) (ingest.Stats, error) {
	var st ingest.Stats
	hosts := map[string]*ingest.Assembler{}
	var order []string
	emit := func(es []domain.Entry) error {
		for _, e := range es {
			st.Entries++
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	}
	q, err := QueryRange(ctx, cfg, func(rec ingest.Record) error {
		st.Records++
		// As the receiver: a record with neither text nor MESSAGE_ID
		// gives the tracker nothing to go by.
		if len(bytes.TrimSpace(rec["MESSAGE"])) == 0 && len(rec["MESSAGE_ID"]) == 0 {
			return nil
		}
		host := string(rec["_HOSTNAME"])
		asm := hosts[host]
		if asm == nil {
			asm = ingest.NewAssembler("loki:"+host, opt)
			hosts[host] = asm
			order = append(order, host)
		}
		return emit(asm.Push(rec))
	})
	*qs = q
	st.Bytes, st.Malformed, st.Errors = q.Bytes, q.Malformed, q.Errors
	if err != nil {
		return st, err
	}
	for _, h := range order {
		es := hosts[h].Flush()
		st.Orphans += int64(len(es))
		if err := emit(es); err != nil {
			return st, err
		}
	}
	return st, nil
}
