package store

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/llmfleet/analyzer/domain"
)

// timeText renders t as RFC 3339 with nanoseconds and the source's offset,
// "" for the zero time.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// timeMicros is t in µs since the epoch, NULL for the zero time.
func timeMicros(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: true}
}

// parseTimeText is the inverse of timeText. time.Parse keeps the offset
// (as a fixed zone, or Local when the offset matches it).
func parseTimeText(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func nullInt(p *int) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*p), Valid: true}
}

func intPtr(n sql.NullInt64) *int {
	if !n.Valid {
		return nil
	}
	v := int(n.Int64)
	return &v
}

// encodeShape renders a shape as JSON so that decodeShape gives back the
// same Go types: integers are written without a fraction and floats always
// with one ("1.0", not "1"), which plain encoding/json does not guarantee.
// Keys are sorted so identical shapes give identical text. Non-finite
// floats cannot be JSON numbers and are left out.
func encodeShape(s domain.Shape) (string, error) {
	var b bytes.Buffer
	if err := encodeValue(&b, map[string]any(s)); err != nil {
		return "", err
	}
	return b.String(), nil
}

func encodeValue(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case float64:
		writeFloat(b, x)
	case float32:
		writeFloat(b, float64(x))
	case int:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		fmt.Fprintf(b, "%d", x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k, vv := range x {
			if f, ok := vv.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
				continue
			}
			keys = append(keys, k)
		}
		return writeObject(b, keys, func(k string) error {
			if err := encodeValue(b, x[k]); err != nil {
				return fmt.Errorf("shape key %q: %w", k, err)
			}
			return nil
		})
	case domain.Shape:
		return encodeValue(b, map[string]any(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encodeValue(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case string:
		writeString(b, x)
	case map[string]string:
		writeStringMap(b, x)
	default:
		// bool, []string, map[string]string, ...: encoding/json
		// round-trips these as the same JSON kind.
		vb, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(vb)
	}
	return nil
}

// writeStringMap writes m as encoding/json writes a map[string]string:
// keys sorted, each key and value as writeString writes it. A finding's
// captures are such a map, one per finding; json.Marshal of them was 2 %
// of a night-ladder replay's CPU, most of it reflection. A key that
// needs escaping (never a regexp group's name) takes json.Marshal's
// path, whose key order is then its own.
func writeStringMap(b *bytes.Buffer, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !plainJSON(k) {
			vb, _ := json.Marshal(m) // cannot fail: strings only
			b.Write(vb)
			return
		}
		keys = append(keys, k)
	}
	// The values are strings: no error.
	_ = writeObject(b, keys, func(k string) error { writeString(b, m[k]); return nil })
}

// writeObject writes a JSON object of keys (sorted here, as encoding/json
// sorts a map's), each written by writeString and its value by value.
func writeObject(b *bytes.Buffer, keys []string, value func(k string) error) error {
	sort.Strings(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, k)
		b.WriteByte(':')
		if err := value(k); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// plainJSON reports whether encoding/json writes s between quotes as it
// is: printable ASCII other than '"', '\\' and the HTML characters it
// escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// writeString writes s as encoding/json does; a shape's keys and most of
// its values are plain ASCII, which need no escaping and no reflection
// (json.Marshal per key was a tenth of a save).
func writeString(b *bytes.Buffer, s string) {
	if !plainJSON(s) {
		sb, _ := json.Marshal(s)
		b.Write(sb)
		return
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

func writeFloat(b *bytes.Buffer, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		b.WriteString("null")
		return
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	b.WriteString(s)
}

// decodeShape parses shape_json: a JSON number with a fraction or exponent
// becomes float64, any other number int64 (float64 if it overflows).
func decodeShape(text string) (domain.Shape, error) {
	if text == "" {
		return domain.Shape{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	s := domain.Shape{}
	for k, v := range m {
		s[k] = fixNumbers(v)
	}
	return s, nil
}

func fixNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		str := x.String()
		if !strings.ContainsAny(str, ".eE") {
			if n, err := strconv.ParseInt(str, 10, 64); err == nil {
				return n
			}
		}
		f, _ := strconv.ParseFloat(str, 64)
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = fixNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = fixNumbers(e)
		}
		return x
	}
	return v
}

// shapeInt returns an integer shape value for an indexed column.
func shapeInt(s domain.Shape, key string) sql.NullInt64 {
	if n, ok := s.Int(key); ok {
		return sql.NullInt64{Int64: n, Valid: true}
	}
	return sql.NullInt64{}
}

func shapeFloat(s domain.Shape, key string) sql.NullFloat64 {
	if f, ok := s.Float(key); ok && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return sql.NullFloat64{Float64: f, Valid: true}
	}
	return sql.NullFloat64{}
}

func shapeText(s domain.Shape, key string) sql.NullString {
	if _, ok := s[key]; !ok {
		return sql.NullString{}
	}
	return sql.NullString{String: s.String(key), Valid: true}
}

// maxTimeline caps a stored timeline's decoded JSON: a mark per phase
// change, each line within the tracker's message cap, is far below it.
const maxTimeline = 16 << 20

// decodeTimeline parses timeline_json: JSON text, or (a []byte) the S2
// block of its JSON that versions before migration 0011 wrote (timelines
// are in attempt_lines since).
func decodeTimeline(v any) ([]domain.PhaseMark, error) {
	var text []byte
	switch x := v.(type) {
	case string:
		text = []byte(x)
	case []byte:
		n, err := s2.DecodedLen(x)
		if err != nil {
			return nil, err
		}
		if n > maxTimeline {
			return nil, fmt.Errorf("timeline of %d bytes is over the %d byte cap", n, maxTimeline)
		}
		if text, err = s2.Decode(nil, x); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("timeline_json of type %T", v)
	}
	var marks []domain.PhaseMark
	if err := json.Unmarshal(text, &marks); err != nil {
		return nil, err
	}
	return marks, nil
}
