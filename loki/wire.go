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

// DecodeProtobuf decodes a snappy block-compressed logproto.PushRequest
// whose decoded size is at most max bytes.
func DecodeProtobuf(body []byte, max int64) (*push.PushRequest, *RequestError) {
	n, err := snappy.DecodedLen(body)
	if err != nil {
		return nil, reqErr(http.StatusBadRequest, domain.IngestErrSnappy, "snappy: %v (the protobuf body must be snappy block format)", err)
	}
	if max > 0 && int64(n) > max {
		return nil, reqErr(http.StatusRequestEntityTooLarge, domain.IngestErrTooLarge,
			"decoded body of %d bytes is over the limit of %d", n, max)
	}
	buf, err := snappy.Decode(nil, body)
	if err != nil {
		return nil, reqErr(http.StatusBadRequest, domain.IngestErrSnappy, "snappy: %v (the protobuf body must be snappy block format)", err)
	}
	var req push.PushRequest
	if err := req.Unmarshal(buf); err != nil {
		return nil, reqErr(http.StatusBadRequest, domain.IngestErrProtobuf, "protobuf: %v", err)
	}
	return &req, nil
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
// RFC 3339.
func DecodeJSON(body []byte) (*push.PushRequest, *RequestError) {
	var in jsonPush
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		return nil, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "json: %v", err)
	}
	out := &push.PushRequest{Streams: make([]push.Stream, 0, len(in.Streams))}
	for si, s := range in.Streams {
		var st push.Stream
		if s.Labels != nil {
			if _, err := ParseLabels(*s.Labels); err != nil {
				return nil, reqErr(http.StatusBadRequest, domain.IngestErrLabels, "stream %d: %v", si, err)
			}
			st.Labels = *s.Labels
		} else {
			for k := range s.Stream {
				if !ValidLabelName(k) {
					return nil, reqErr(http.StatusBadRequest, domain.IngestErrLabels, "stream %d: invalid label name %q", si, k)
				}
			}
			st.Labels = FormatLabels(s.Stream)
		}
		for vi, v := range s.Values {
			if len(v) < 2 || len(v) > 3 {
				return nil, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "stream %d value %d: want [ts, line] or [ts, line, {metadata}]", si, vi)
			}
			ts, err := nanos(v[0])
			if err != nil {
				return nil, reqErr(http.StatusBadRequest, domain.IngestErrTimestamp, "stream %d value %d: %v", si, vi, err)
			}
			var e push.Entry
			e.Timestamp = ts
			if err := json.Unmarshal(v[1], &e.Line); err != nil {
				return nil, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "stream %d value %d: line: %v", si, vi, err)
			}
			if len(v) == 3 {
				var meta map[string]string
				if err := json.Unmarshal(v[2], &meta); err != nil {
					return nil, reqErr(http.StatusBadRequest, domain.IngestErrJSON, "stream %d value %d: structured metadata: %v", si, vi, err)
				}
				for k, mv := range meta {
					e.StructuredMetadata = append(e.StructuredMetadata, push.LabelAdapter{Name: k, Value: mv})
				}
				e.StructuredMetadata = dedupeLabels(e.StructuredMetadata)
			}
			st.Entries = append(st.Entries, e)
		}
		for ei, le := range s.Entries {
			var str string
			if err := json.Unmarshal(le.TS, &str); err != nil {
				return nil, reqErr(http.StatusBadRequest, domain.IngestErrTimestamp, "stream %d entry %d: ts: %v", si, ei, err)
			}
			ts, err := time.Parse(time.RFC3339Nano, str)
			if err != nil {
				return nil, reqErr(http.StatusBadRequest, domain.IngestErrTimestamp, "stream %d entry %d: ts: %v", si, ei, err)
			}
			st.Entries = append(st.Entries, push.Entry{Timestamp: ts, Line: le.Line})
		}
		out.Streams = append(out.Streams, st)
	}
	return out, nil
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
// Content-Encoding and after snappy. It returns the bytes received too.
func DecodeRequest(r *http.Request, max int64) (*push.PushRequest, int64, *RequestError) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	format, rerr := BodyFormat(r.Header.Get("Content-Type"))
	if rerr != nil {
		return nil, 0, rerr
	}
	body, n, rerr := ReadBody(r, max)
	if rerr != nil {
		return nil, n, rerr
	}
	var req *push.PushRequest
	if format == FormatJSON {
		req, rerr = DecodeJSON(body)
	} else {
		req, rerr = DecodeProtobuf(body, max)
	}
	return req, n, rerr
}
