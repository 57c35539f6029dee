package domain

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AppendJSON appends j as json.Marshal writes it (compact, fields in
// declaration order, empty omitempty fields left out, shape keys sorted,
// strings HTML-escaped), without reflection: explain writes one object per
// attempt, and on a dense journal encoding/json was ~5 % of its time. A
// shape value of a type other than string, bool, int, int64, float64 and
// nil is written by json.Marshal. Its errors are json.Marshal's: a NaN or
// infinite float, or a value json.Marshal rejects; dst is then returned
// as it was.
func (j *AttemptJSON) AppendJSON(dst []byte) ([]byte, error) {
	return j.appendJSON(&jsonOut{b: dst})
}

// AppendJSONIndent is AppendJSON laid out as json.MarshalIndent(j, prefix,
// indent) lays it out.
func (j *AttemptJSON) AppendJSONIndent(dst []byte, prefix, indent string) ([]byte, error) {
	return j.appendJSON(&jsonOut{b: dst, pretty: true, prefix: prefix, indent: indent})
}

func (j *AttemptJSON) appendJSON(o *jsonOut) ([]byte, error) {
	dst := o.b
	str := func(k, v string, omitEmpty bool) {
		if v == "" && omitEmpty {
			return
		}
		o.key(k)
		o.b = appendJSONString(o.b, v)
	}
	num := func(k string, v *int) {
		if v != nil {
			o.key(k)
			o.b = strconv.AppendInt(o.b, int64(*v), 10)
		}
	}
	o.open('{')
	str("id", j.ID, true)
	str("unit", j.Unit, true)
	str("invocation_id", j.InvocationID, true)
	str("container", j.Container, true)
	str("host", j.Host, true)
	str("engine", j.Engine, true)
	str("engine_version", j.EngineVersion, true)
	str("started_at", j.StartedAt, true)
	str("ended_at", j.EndedAt, true)
	str("ready_at", j.ReadyAt, true)
	if j.ReachedReady {
		o.key("reached_ready")
		o.b = append(o.b, "true"...)
	}
	str("phase", string(j.Phase), false)
	str("verdict", string(j.Verdict), false)
	o.key("findings")
	if j.Findings == nil {
		o.b = append(o.b, "null"...)
	} else {
		o.open('[')
		for _, f := range j.Findings {
			o.elem()
			o.b = appendJSONString(o.b, f)
		}
		o.close(']')
	}
	str("rule", j.Rule, true)
	str("note", j.Note, true)
	num("exit_status", j.ExitStatus)
	str("ended_by", j.EndedBy, true)
	num("restart_counter", j.RestartCounter)
	num("restart_counter_after", j.RestartCounterAfter)
	o.key("shape")
	if err := o.shape(j.Shape); err != nil {
		return dst, err
	}
	if len(j.Evidence) > 0 {
		o.key("evidence")
		o.open('[')
		for _, e := range j.Evidence {
			o.elem()
			o.open('{')
			str("time", e.Time, true)
			str("cursor", e.Cursor, true)
			str("message", e.Message, false)
			o.close('}')
		}
		o.close(']')
	}
	str("fingerprint", j.Fingerprint, true)
	o.close('}')
	return o.b, nil
}

// jsonOut writes JSON as json.Marshal does or, pretty, as
// json.MarshalIndent does: each member and element on a line of its own,
// after prefix and one indent per level, and empty objects and arrays as
// {} and [].
type jsonOut struct {
	b              []byte
	pretty         bool
	prefix, indent string
	depth          int
	first          bool // the open object or array has no member yet
}

func (o *jsonOut) open(c byte) {
	o.b = append(o.b, c)
	o.depth++
	o.first = true
}

func (o *jsonOut) close(c byte) {
	o.depth--
	if !o.first {
		o.newline()
	}
	o.b = append(o.b, c)
	o.first = false
}

// elem starts a member or an element.
func (o *jsonOut) elem() {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.newline()
}

// key starts a member named k, which needs no escaping.
func (o *jsonOut) key(k string) {
	o.elem()
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
	if o.pretty {
		o.b = append(o.b, ' ')
	}
}

func (o *jsonOut) newline() {
	if o.pretty {
		o.b = append(o.b, '\n')
		o.b = append(o.b, o.prefix...)
		for range o.depth {
			o.b = append(o.b, o.indent...)
		}
	}
}

// shape writes s as json.Marshal writes a map[string]any.
func (o *jsonOut) shape(s Shape) error {
	if s == nil {
		o.b = append(o.b, "null"...)
		return nil
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	o.open('{')
	for _, k := range keys {
		o.elem()
		o.b = appendJSONString(o.b, k)
		o.b = append(o.b, ':')
		if o.pretty {
			o.b = append(o.b, ' ')
		}
		if err := o.value(s[k]); err != nil {
			return err
		}
	}
	o.close('}')
	return nil
}

// value writes v as json.Marshal does, laid out at the current level.
func (o *jsonOut) value(v any) error {
	b, enc, err := appendJSONValue(o.b, v)
	if err != nil {
		return err
	}
	if enc == nil {
		o.b = b
		return nil
	}
	if !o.pretty {
		o.b = append(o.b, enc...)
		return nil
	}
	var buf bytes.Buffer
	// enc is json.Marshal's, so valid: Indent does not fail.
	_ = json.Indent(&buf, enc, o.prefix+strings.Repeat(o.indent, o.depth), o.indent)
	o.b = append(o.b, buf.Bytes()...)
	return nil
}

// appendJSONValue appends v as json.Marshal writes it, when v is of a
// type it writes itself; otherwise it returns json.Marshal's encoding of
// v in enc, for the caller to lay out, and b unchanged.
func appendJSONValue(b []byte, v any) (out, enc []byte, err error) {
	switch x := v.(type) {
	case string:
		return appendJSONString(b, x), nil, nil
	case bool:
		return strconv.AppendBool(b, x), nil, nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil, nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			break // json.Marshal's error
		}
		return appendJSONFloat(b, x), nil, nil
	case nil:
		return append(b, "null"...), nil, nil
	}
	enc, err = json.Marshal(v)
	return b, enc, err
}

// appendJSONFloat appends a finite f as encoding/json does: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// on, with a one-digit negative exponent written without its zero.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// invalidUTF8 is what encoding/json writes for a byte of invalid UTF-8:
// the character U+FFFD with Go 1.27's encoder, the escape \ufffd with Go
// 1.26's (the Dockerfile's). Asked once, so the output stays json.Marshal's
// with whichever Go builds it.
var invalidUTF8 = func() string {
	b, err := json.Marshal("\xff")
	if err != nil || len(b) < 2 {
		return "\ufffd"
	}
	return string(b[1 : len(b)-1])
}()

// appendJSONString appends s quoted as json.Marshal quotes it: '"' and
// '\' escaped with a backslash, \b \f \n \r \t for those controls and
// \u00XX for the others, '<' '>' '&' and U+2028 U+2029 as \u escapes,
// each byte of invalid UTF-8 as encoding/json writes U+FFFD
// (invalidUTF8).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, invalidUTF8...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
