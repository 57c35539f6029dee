package loki

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/golang/snappy"
	"github.com/grafana/loki/pkg/push"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/llmfleet/analyzer/domain"
)

// DefaultMaxBytes is the default limit of a push body, both as received and
// after decompression (Alloy and Promtail send batches of 1 MiB by default).
const DefaultMaxBytes = 10 << 20

// RequestError is a push request refused: the HTTP status to answer and the
// reason counted in analyzer_ingest_errors_total.
type RequestError struct {
	Status int
	Reason string
	Err    error
}

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

func reqErr(status int, reason string, format string, args ...any) *RequestError {
	return &RequestError{Status: status, Reason: reason, Err: fmt.Errorf(format, args...)}
}

// Body formats of a push request.
const (
	FormatProtobuf = "protobuf"
	FormatJSON     = "json"
)

// BodyFormat returns the format a Content-Type announces: application/json
// is JSON; a protobuf or binary type is snappy-compressed protobuf. No type
// is refused (415), unlike Loki, which reads it as protobuf: Alloy and
// Promtail always send one, and a browser form or fetch() of another
// origin can send a body without one, which must not count as a push.
func BodyFormat(contentType string) (string, *RequestError) {
	if strings.TrimSpace(contentType) == "" {
		return "", reqErr(http.StatusUnsupportedMediaType, domain.IngestErrContentType,
			"Content-Type missing: send application/x-protobuf (snappy) or application/json")
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", reqErr(http.StatusUnsupportedMediaType, domain.IngestErrContentType, "Content-Type %q: %v", contentType, err)
	}
	switch mt {
	case "application/json":
		return FormatJSON, nil
	case "application/x-protobuf", "application/protobuf", "application/vnd.google.protobuf",
		"application/octet-stream":
		return FormatProtobuf, nil
	}
	return "", reqErr(http.StatusUnsupportedMediaType, domain.IngestErrContentType,
		"Content-Type %q not supported: send application/x-protobuf (snappy) or application/json", contentType)
}

// ReadBody reads a request body of at most max bytes, as received and after
// Content-Encoding is undone ("" and "snappy" leave it as is: Loki treats
// snappy as a no-op header, the protobuf body is snappy anyway; gzip and
// deflate are decompressed). It returns the decoded body and the number of
// bytes received.
func ReadBody(r *http.Request, max int64) ([]byte, int64, *RequestError) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if r.ContentLength > max {
		return nil, 0, reqErr(http.StatusRequestEntityTooLarge, domain.IngestErrTooLarge,
			"body of %d bytes is over the limit of %d", r.ContentLength, max)
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity", "snappy", "gzip", "x-gzip", "deflate":
	default:
		return nil, 0, reqErr(http.StatusBadRequest, domain.IngestErrEncoding, "Content-Encoding %q not supported", enc)
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		var mbe *http.MaxBytesError // a server that wrapped the body itself
		if errors.As(err, &mbe) {
			return nil, int64(len(raw)), reqErr(http.StatusRequestEntityTooLarge, domain.IngestErrTooLarge, "body over the limit: %v", err)
		}
		return nil, int64(len(raw)), reqErr(http.StatusBadRequest, domain.IngestErrReadBody, "reading the body: %v", err)
	}
	n := int64(len(raw))
	if n > max {
		return nil, n, reqErr(http.StatusRequestEntityTooLarge, domain.IngestErrTooLarge, "body is over the limit of %d bytes", max)
	}
	var zr io.ReadCloser
	switch enc {
	case "gzip", "x-gzip":
		g, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, n, reqErr(http.StatusBadRequest, domain.IngestErrDecompress, "gzip: %v", err)
		}
		zr = g
	case "deflate":
		zr = flate.NewReader(bytes.NewReader(raw))
	default:
		return raw, n, nil
	}
	defer zr.Close()
	body, err := io.ReadAll(io.LimitReader(zr, max+1))
	if err != nil {
		return nil, n, reqErr(http.StatusBadRequest, domain.IngestErrDecompress, "%s: %v", enc, err)
	}
	if int64(len(body)) > max {
		return nil, n, reqErr(http.StatusRequestEntityTooLarge, domain.IngestErrTooLarge,
			"body is over the limit of %d bytes after %s decompression", max, enc)
	}
	return body, n, nil
}

// Loki's default limits of one entry's structured metadata
// (max_structured_metadata_entries_count, max_structured_metadata_size in
// limits_config): an entry over them is skipped as malformed.
const (
	MaxStructuredMetadataEntries = 128
	MaxStructuredMetadataBytes   = 64 << 10
)

// maxDecodeErrors is how many skipped items a Decoded describes.
const maxDecodeErrors = 10

// Stream is one decoded stream of a push: its labels, parsed, sorted and
// within Loki's limits (CheckLabelLimits), and its well-formed entries.
type Stream struct {
	Labels  push.LabelsAdapter
	Entries []push.Entry
}

// Decoded is a push as decoded: the well-formed streams, and what was
// skipped. A malformed entry is skipped alone; a stream whose labels do
// not parse or break a limit is skipped with all its entries; the rest is
// kept.
type Decoded struct {
	Streams []Stream
	// Skipped counts the entries skipped (and a stream whose entries could
	// not be counted as one).
	Skipped int
	// Errors describe the first skipped items (at most 10), in order;
	// Errors[0] is what a refusal answers.
	Errors []*RequestError
}

func (d *Decoded) skip(n int, e *RequestError) {
	d.Skipped += n
	if len(d.Errors) < maxDecodeErrors {
		d.Errors = append(d.Errors, e)
	}
}

// Request returns the well-formed streams as a push.PushRequest.
func (d *Decoded) Request() *push.PushRequest {
	out := &push.PushRequest{Streams: make([]push.Stream, 0, len(d.Streams))}
	for _, s := range d.Streams {
		m := make(map[string]string, len(s.Labels))
		for _, l := range s.Labels {
			m[l.Name] = l.Value
		}
		out.Streams = append(out.Streams, push.Stream{Labels: FormatLabels(m), Entries: s.Entries})
	}
	return out
}

// DecodeLimits bounds one push. Zero values take the defaults.
type DecodeLimits struct {
	// MaxBytes bounds the body as received, after Content-Encoding and
	// after snappy (default DefaultMaxBytes).
	MaxBytes int64
	// MaxEntries bounds the entries of one push, malformed ones included
	// (default DefaultMaxEntries); decoding stops at the first one over.
	MaxEntries int
}

// DefaultMaxEntries is the default of DecodeLimits.MaxEntries: a body of
// tiny entries costs far more memory decoded than sent.
const DefaultMaxEntries = 100000

func (l DecodeLimits) withDefaults() DecodeLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	return l
}

func tooManyEntries(max int) *RequestError {
	return reqErr(http.StatusRequestEntityTooLarge, domain.IngestErrTooLarge,
		"more than %d entries in one push: send smaller batches", max)
}

// streamLabels parses and checks a stream's labels (ParseLabels,
// CheckLabelLimits), as a 400 naming the stream and the limit.
func streamLabels(si int, s string) (push.LabelsAdapter, *RequestError) {
	ls, err := ParseLabels(s)
	if err == nil {
		err = CheckLabelLimits(ls)
	}
	if err != nil {
		return nil, reqErr(http.StatusBadRequest, domain.IngestErrLabels, "stream %d: %v", si, err)
	}
	return ls, nil
}

// checkMetadata applies Loki's structured-metadata limits to one entry.
func checkMetadata(md push.LabelsAdapter) error {
	if len(md) > MaxStructuredMetadataEntries {
		return fmt.Errorf("%d structured metadata entries, over max_structured_metadata_entries_count (%d)", len(md), MaxStructuredMetadataEntries)
	}
	n := 0
	for _, l := range md {
		n += len(l.Name) + len(l.Value)
	}
	if n > MaxStructuredMetadataBytes {
		return fmt.Errorf("%d bytes of structured metadata, over max_structured_metadata_size (%d)", n, MaxStructuredMetadataBytes)
	}
	return nil
}

// DecodeProtobuf decodes a snappy block-compressed logproto.PushRequest
// (push.proto of github.com/grafana/loki/pkg/push) whose decoded size is at
// most max bytes. It returns the well-formed streams and entries; when some
// were skipped (see DecodePush), the error describes the first.
func DecodeProtobuf(body []byte, max int64) (*push.PushRequest, *RequestError) {
	d, rerr := DecodePush(body, FormatProtobuf, DecodeLimits{MaxBytes: max})
	if rerr != nil {
		return nil, rerr
	}
	return d.Request(), firstError(d)
}

func firstError(d *Decoded) *RequestError {
	if len(d.Errors) > 0 {
		return d.Errors[0]
	}
	return nil
}

// DecodePush decodes a push body of format (FormatProtobuf: snappy block
// protobuf; FormatJSON: Loki's push JSON). A malformed entry, or a stream
// whose labels break Loki's limits, is skipped and described in the
// Decoded; the error is for a body that cannot be read at all (bad snappy,
// broken framing, invalid JSON: 400) or over lim (413).
func DecodePush(body []byte, format string, lim DecodeLimits) (*Decoded, *RequestError) {
	lim = lim.withDefaults()
	if format == FormatJSON {
		return decodeJSON(body, lim)
	}
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return nil, reqErr(http.StatusBadRequest, domain.IngestErrSnappy, "snappy: %v (the protobuf body must be snappy block format)", err)
	}
	if int64(n) > lim.MaxBytes {
		return nil, reqErr(http.StatusRequestEntityTooLarge, domain.IngestErrTooLarge,
			"decoded body of %d bytes is over the limit of %d", n, lim.MaxBytes)
	}
	buf, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, reqErr(http.StatusBadRequest, domain.IngestErrSnappy, "snappy: %v (the protobuf body must be snappy block format)", err)
	}
	return decodeProtobuf(buf, lim)
}

// decodeProtobuf walks PushRequest's wire format itself (field 1: repeated
// StreamAdapter) so that one bad stream or entry does not lose the others:
// each stream's labels are checked before its entries are decoded, and
// each entry is decoded alone.
func decodeProtobuf(buf []byte, lim DecodeLimits) (*Decoded, *RequestError) {
	d := &Decoded{}
	entries := 0
	all := len(buf)
	for si := 0; len(buf) > 0; {
		off := all - len(buf)
		num, typ, n := protowire.ConsumeTag(buf)
		if n < 0 {
			return nil, reqErr(http.StatusBadRequest, domain.IngestErrProtobuf, "protobuf: at byte %d: %v", off, protowire.ParseError(n))
		}
		buf = buf[n:]
		if num != 1 || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, buf); n < 0 {
				return nil, reqErr(http.StatusBadRequest, domain.IngestErrProtobuf, "protobuf: at byte %d: %v", off, protowire.ParseError(n))
			}
			buf = buf[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(buf)
		if n < 0 {
			return nil, reqErr(http.StatusBadRequest, domain.IngestErrProtobuf, "protobuf: stream %d at byte %d: %v", si, off, protowire.ParseError(n))
		}
		buf = buf[n:]
		if rerr := decodeStream(d, v, si, off, &entries, lim); rerr != nil {
			return nil, rerr
		}
		si++
	}
	return d, nil
}

// decodeStream decodes one StreamAdapter (1: labels, 2: repeated
// EntryAdapter, 3: hash) into d. A first pass checks the framing, counts
// the entries and finds the labels; only a stream whose labels pass has
// its entries decoded.
func decodeStream(d *Decoded, v []byte, si, off int, entries *int, lim DecodeLimits) *RequestError {
	var labels []byte
	n := 0
	bad := walkStream(v, func(num protowire.Number, b []byte) bool {
		if num == 1 {
			labels = b
			return true
		}
		n++
		*entries++
		return *entries <= lim.MaxEntries
	})
	if *entries > lim.MaxEntries {
		return tooManyEntries(lim.MaxEntries)
	}
	if bad < 0 {
		d.skip(max(n, 1), reqErr(http.StatusBadRequest, domain.IngestErrProtobuf,
			"protobuf: stream %d at byte %d: %v", si, off, protowire.ParseError(bad)))
		return nil
	}
	ls, rerr := streamLabels(si, string(labels))
	if rerr != nil {
		d.skip(max(n, 1), rerr)
		return nil
	}
	st := Stream{Labels: ls, Entries: make([]push.Entry, 0, n)}
	ei := 0
	walkStream(v, func(num protowire.Number, b []byte) bool {
		if num != 2 {
			return true
		}
		var e push.Entry
		err := e.Unmarshal(b)
		if err == nil {
			err = checkMetadata(e.StructuredMetadata)
		}
		if err != nil {
			d.skip(1, reqErr(http.StatusBadRequest, domain.IngestErrProtobuf, "stream %d entry %d: %v", si, ei, err))
		} else {
			e.Parsed = nil // a query's own labels, never a pushed entry's
			st.Entries = append(st.Entries, e)
		}
		ei++
		return true
	})
	d.Streams = append(d.Streams, st)
	return nil
}

// walkStream calls fn with each labels (1) and entry (2) field of a
// StreamAdapter until fn returns false; it returns a protowire error code
// (< 0) for broken framing, 0 otherwise.
func walkStream(v []byte, fn func(protowire.Number, []byte) bool) int {
	for len(v) > 0 {
		num, typ, n := protowire.ConsumeTag(v)
		if n < 0 {
			return n
		}
		v = v[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			b, n := protowire.ConsumeBytes(v)
			if n < 0 {
				return n
			}
			v = v[n:]
			if !fn(num, b) {
				return 0
			}
			continue
		}
		if n = protowire.ConsumeFieldValue(num, typ, v); n < 0 {
			return n
		}
		v = v[n:]
	}
	return 0
}

// EncodeProtobuf marshals req and compresses it with snappy (block format),
// ready to POST with Content-Type application/x-protobuf.
func EncodeProtobuf(req *push.PushRequest) ([]byte, error) {
	b, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	return snappy.Encode(nil, b), nil
}

// jsonPush is Loki's push JSON: {"streams":[{"stream":{…},"values":[[ns, line, {meta}]]}]}.
// The legacy form {"streams":[{"labels":"{…}","entries":[{"ts":…,"line":…}]}]}
// is accepted too.
type jsonPush struct {
	Streams []struct {
		Stream  map[string]string   `json:"stream"`
		Values  [][]json.RawMessage `json:"values"`
		Labels  *string             `json:"labels"`
		Entries []struct {
			TS   json.RawMessage `json:"ts"`
			Line string          `json:"line"`
		} `json:"entries"`
	} `json:"streams"`
}

// DecodeJSON decodes a JSON push body into the protobuf types. Timestamps
// are strings (or numbers) of Unix nanoseconds; the legacy form's ts is
// RFC 3339. It returns the well-formed streams and entries; when some were
// skipped (see DecodePush), the error describes the first.
func DecodeJSON(body []byte) (*push.PushRequest, *RequestError) {
	d, rerr := DecodePush(body, FormatJSON, DecodeLimits{MaxBytes: int64(len(body)) + 1})
	if rerr != nil {
		return nil, rerr
	}
	return d.Request(), firstError(d)
}

func decodeJSON(body []byte, lim DecodeLimits) (*Decoded, *RequestError) {
	var in jsonPush
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		return nil, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "json: %v", err)
	}
	d := &Decoded{Streams: make([]Stream, 0, len(in.Streams))}
	total := 0
	for si, s := range in.Streams {
		n := len(s.Values) + len(s.Entries)
		if total += n; total > lim.MaxEntries {
			return nil, tooManyEntries(lim.MaxEntries)
		}
		var ls push.LabelsAdapter
		var rerr *RequestError
		if s.Labels != nil {
			ls, rerr = streamLabels(si, *s.Labels)
		} else {
			for k, v := range s.Stream {
				if !ValidLabelName(k) {
					rerr = reqErr(http.StatusBadRequest, domain.IngestErrLabels, "stream %d: invalid label name %.60q", si, k)
					break
				}
				if v != "" { // Loki treats an empty label as absent
					ls = append(ls, push.LabelAdapter{Name: k, Value: v})
				}
			}
			if rerr == nil {
				ls = dedupeLabels(ls)
				if err := CheckLabelLimits(ls); err != nil {
					rerr = reqErr(http.StatusBadRequest, domain.IngestErrLabels, "stream %d: %v", si, err)
				}
			}
		}
		if rerr != nil {
			d.skip(max(n, 1), rerr)
			continue
		}
		st := Stream{Labels: ls, Entries: make([]push.Entry, 0, n)}
		for vi, v := range s.Values {
			e, rerr := jsonValue(v)
			if rerr != nil {
				rerr.Err = fmt.Errorf("stream %d value %d: %w", si, vi, rerr.Err)
				d.skip(1, rerr)
				continue
			}
			st.Entries = append(st.Entries, e)
		}
		for ei, le := range s.Entries {
			var str string
			err := json.Unmarshal(le.TS, &str)
			var ts time.Time
			if err == nil {
				ts, err = time.Parse(time.RFC3339Nano, str)
			}
			if err != nil {
				d.skip(1, reqErr(http.StatusBadRequest, domain.IngestErrTimestamp, "stream %d entry %d: ts: %v", si, ei, err))
				continue
			}
			st.Entries = append(st.Entries, push.Entry{Timestamp: ts, Line: le.Line})
		}
		d.Streams = append(d.Streams, st)
	}
	return d, nil
}

// jsonValue reads one [ts, line] or [ts, line, {metadata}] of a stream.
func jsonValue(v []json.RawMessage) (push.Entry, *RequestError) {
	var e push.Entry
	if len(v) < 2 || len(v) > 3 {
		return e, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "want [ts, line] or [ts, line, {metadata}]")
	}
	ts, err := nanos(v[0])
	if err != nil {
		return e, reqErr(http.StatusBadRequest, domain.IngestErrTimestamp, "%v", err)
	}
	e.Timestamp = ts
	if err := json.Unmarshal(v[1], &e.Line); err != nil {
		return e, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "line: %v", err)
	}
	if len(v) == 3 {
		var meta map[string]string
		if err := json.Unmarshal(v[2], &meta); err != nil {
			return e, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "structured metadata: %v", err)
		}
		for k, mv := range meta {
			e.StructuredMetadata = append(e.StructuredMetadata, push.LabelAdapter{Name: k, Value: mv})
		}
		e.StructuredMetadata = dedupeLabels(e.StructuredMetadata)
		if err := checkMetadata(e.StructuredMetadata); err != nil {
			return e, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "%v", err)
		}
	}
	return e, nil
}

// nanos reads a JSON string or number of Unix nanoseconds.
func nanos(raw json.RawMessage) (time.Time, error) {
	s := strings.TrimSpace(string(raw))
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(raw, &s); err != nil {
			return time.Time{}, err
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %.30q: want Unix nanoseconds", s)
	}
	return time.Unix(0, n), nil
}

// EncodeJSON renders req as Loki's push JSON (with structured metadata as
// the third element of a value), for clients that cannot send protobuf.
// Stream labels are parsed from their selector form.
func EncodeJSON(req *push.PushRequest) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"streams":[`)
	for i, s := range req.Streams {
		ls, err := ParseLabels(s.Labels)
		if err != nil {
			return nil, err
		}
		m := make(map[string]string, len(ls))
		for _, l := range ls {
			m[l.Name] = l.Value
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"stream":`)
		sb, _ := json.Marshal(m)
		b.Write(sb)
		b.WriteString(`,"values":[`)
		for j, e := range s.Entries {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`["`)
			b.WriteString(strconv.FormatInt(e.Timestamp.UnixNano(), 10))
			b.WriteString(`",`)
			lb, _ := json.Marshal(e.Line)
			b.Write(lb)
			if len(e.StructuredMetadata) > 0 {
				meta := make(map[string]string, len(e.StructuredMetadata))
				for _, l := range e.StructuredMetadata {
					meta[l.Name] = l.Value
				}
				mb, _ := json.Marshal(meta)
				b.WriteByte(',')
				b.Write(mb)
			}
			b.WriteByte(']')
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}`)
	return b.Bytes(), nil
}

// DecodeRequest reads and decodes a push request as Loki does (see
// BodyFormat and ReadBody), with max bounding the body as received, after
// Content-Encoding and after snappy. It returns the well-formed streams
// and entries, the bytes received, and, when some were skipped
// (DecodePush), the first as the error.
func DecodeRequest(r *http.Request, max int64) (*push.PushRequest, int64, *RequestError) {
	d, n, rerr := ReadRequest(r, DecodeLimits{MaxBytes: max})
	if rerr != nil {
		return nil, n, rerr
	}
	return d.Request(), n, firstError(d)
}

// ReadRequest reads a push request (BodyFormat, ReadBody) and decodes it
// (DecodePush) within lim. It returns the bytes received too.
func ReadRequest(r *http.Request, lim DecodeLimits) (*Decoded, int64, *RequestError) {
	lim = lim.withDefaults()
	format, rerr := BodyFormat(r.Header.Get("Content-Type"))
	if rerr != nil {
		return nil, 0, rerr
	}
	body, n, rerr := ReadBody(r, lim.MaxBytes)
	if rerr != nil {
		return nil, n, rerr
	}
	d, rerr := DecodePush(body, format, lim)
	return d, n, rerr
}
