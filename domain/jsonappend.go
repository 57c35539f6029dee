package domain

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends j as json.Marshal writes it (compact, fields in
// declaration order, empty omitempty fields left out, shape keys sorted,
// strings HTML-escaped), without reflection: explain writes one object per
// attempt, and on a dense journal encoding/json was ~5 % of its time. A
// shape value of a type other than string, bool, int, int64 and float64
// is written by json.Marshal. Its errors are json.Marshal's: a NaN or
// infinite float, or a value json.Marshal rejects.
func (j *AttemptJSON) AppendJSON(dst []byte) ([]byte, error) {
	b := append(dst, '{')
	first := true
	key := func(k string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	str := func(k, v string, omitEmpty bool) {
		if v == "" && omitEmpty {
			return
		}
		key(k)
		b = appendJSONString(b, v)
	}
	num := func(k string, v *int) {
		if v != nil {
			key(k)
			b = strconv.AppendInt(b, int64(*v), 10)
		}
	}
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
		key("reached_ready")
		b = append(b, "true"...)
	}
	str("phase", string(j.Phase), false)
	str("verdict", string(j.Verdict), false)
	key("findings")
	if j.Findings == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, f := range j.Findings {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f)
		}
		b = append(b, ']')
	}
	str("rule", j.Rule, true)
	str("note", j.Note, true)
	num("exit_status", j.ExitStatus)
	str("ended_by", j.EndedBy, true)
	num("restart_counter", j.RestartCounter)
	num("restart_counter_after", j.RestartCounterAfter)
	key("shape")
	var err error
	if b, err = appendShape(b, j.Shape); err != nil {
		return dst, err
	}
	if len(j.Evidence) > 0 {
		key("evidence")
		b = append(b, '[')
		for i, e := range j.Evidence {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			first = true
			str("time", e.Time, true)
			str("cursor", e.Cursor, true)
			str("message", e.Message, false)
			b = append(b, '}')
		}
		b = append(b, ']')
		first = false
	}
	str("fingerprint", j.Fingerprint, true)
	return append(b, '}'), nil
}

// appendShape appends s as json.Marshal writes a map[string]any.
func appendShape(b []byte, s Shape) ([]byte, error) {
	if s == nil {
		return append(b, "null"...), nil
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSONValue(b, s[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendJSONValue appends v as json.Marshal writes it.
func appendJSONValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendJSONString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			break // json.Marshal's error
		}
		return appendJSONFloat(b, x), nil
	case nil:
		return append(b, "null"...), nil
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, enc...), nil
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

// appendJSONString appends s quoted as json.Marshal quotes it: '"' and
// '\' escaped with a backslash, \b \f \n \r \t for those controls and
// \u00XX for the others, '<' '>' '&' and U+2028 U+2029 as \u escapes,
// each byte of invalid UTF-8 as the character U+FFFD (encoding/json of
// the toolchain go.mod names; older ones wrote the escape \ufffd, and the
// tests hold the two equal).
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
			b = append(b, "\ufffd"...)
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
