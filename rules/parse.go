package rules

import (
	"math"
	"strconv"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

// pyParser reads the Python literal subset engines print: vLLM's
// "non-default args: {...}" (a dict repr) and SGLang's
// "ServerArgs(k=v, ...)" (a dataclass repr). Truncated input yields what
// was read before the cut.
//
// The text is untrusted (any process can log such a line), so every loop
// consumes at least one byte per turn or stops, and nesting deeper than
// maxPyDepth is malformed: time is linear in the input and the stack is
// bounded.
//
// want, when not nil, names the top-level keys whose values are kept: the
// others are read for their length only (skip), without making their
// strings, lists and maps. vLLM's config lines are ~700 bytes of nested
// reprs of which the shape takes a few numbers: building all of it was
// ~2 % of a night journal's explain.
type pyParser struct {
	s     string
	i     int
	depth int
	want  map[string]string
	skip  int // > 0: inside a value nobody keeps
}

// keeps reports whether the top-level key's value is kept.
func (p *pyParser) keeps(key string) bool {
	if p.want == nil {
		return true
	}
	_, ok := p.want[key]
	return ok
}

// maxPyDepth bounds container nesting. Engine reprs nest three or four
// levels (speculative_config, compilation_config); 32 leaves room.
const maxPyDepth = 32

func (p *pyParser) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *pyParser) eof() bool { return p.i >= len(p.s) }

// value parses one literal; ok is false on malformed or truncated input.
func (p *pyParser) value() (any, bool) {
	p.ws()
	if p.eof() {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '\'' || c == '"':
		return p.str(c)
	case c == '{' || c == '[' || c == '(':
		if p.depth >= maxPyDepth {
			return nil, false
		}
		p.depth++
		defer func() { p.depth-- }()
		switch c {
		case '{':
			return p.dict()
		case '[':
			return p.list(']')
		default:
			return p.list(')')
		}
	default:
		// number, True/False/None, or a bare token (enum reprs, paths).
		start := p.i
		depth := 0
		for !p.eof() {
			ch := p.s[p.i]
			if depth == 0 && (ch == ',' || ch == '}' || ch == ']' || ch == ')') {
				break
			}
			if ch == '(' || ch == '<' {
				depth++
			}
			if (ch == ')' || ch == '>') && depth > 0 {
				depth--
			}
			p.i++
		}
		if p.i == start {
			// A closer that is not ours (e.g. "[)]"): nothing was
			// consumed, so the caller must not loop on it.
			return nil, false
		}
		if p.skip > 0 {
			return nil, true
		}
		tok := strings.TrimSpace(p.s[start:p.i])
		switch tok {
		case "True":
			return true, true
		case "False":
			return false, true
		case "None":
			return nil, true
		}
		if n, ok := parseNumber(tok); ok {
			return n, true
		}
		return tok, true
	}
}

func (p *pyParser) str(q byte) (any, bool) {
	p.i++
	if p.skip > 0 {
		for !p.eof() {
			switch p.s[p.i] {
			case '\\':
				p.i += min(2, len(p.s)-p.i)
				continue
			case q:
				p.i++
				return nil, true
			}
			p.i++
		}
		return nil, false
	}
	var b strings.Builder
	for !p.eof() {
		c := p.s[p.i]
		if c == '\\' && p.i+1 < len(p.s) {
			b.WriteByte(p.s[p.i+1])
			p.i += 2
			continue
		}
		if c == q {
			p.i++
			return b.String(), true
		}
		b.WriteByte(c)
		p.i++
	}
	return b.String(), false
}

func (p *pyParser) list(end byte) (any, bool) {
	p.i++
	var out []any
	for {
		before := p.i
		p.ws()
		if p.eof() {
			return out, false
		}
		if p.s[p.i] == end {
			p.i++
			return out, true
		}
		v, ok := p.value()
		if !ok {
			return out, false
		}
		if p.skip == 0 {
			out = append(out, v)
		}
		p.ws()
		if !p.eof() && p.s[p.i] == ',' {
			p.i++
		}
		if p.i == before {
			return out, false // no progress: malformed
		}
	}
}

func (p *pyParser) dict() (any, bool) {
	top := p.depth == 0
	p.i++
	var out map[string]any
	if p.skip == 0 {
		out = map[string]any{}
	}
	for {
		before := p.i
		p.ws()
		if p.eof() {
			return out, false
		}
		if p.s[p.i] == '}' {
			p.i++
			return out, true
		}
		k, ok := p.value()
		if !ok {
			return out, false
		}
		p.ws()
		if p.eof() || p.s[p.i] != ':' {
			return out, false
		}
		p.i++
		key, isStr := k.(string)
		drop := top && isStr && !p.keeps(key)
		if drop {
			p.skip++
		}
		v, ok := p.value()
		if drop {
			p.skip--
		} else if isStr && p.skip == 0 {
			out[key] = v
		}
		if !ok {
			return out, false
		}
		p.ws()
		if !p.eof() && p.s[p.i] == ',' {
			p.i++
		}
		if p.i == before {
			return out, false // no progress: malformed
		}
	}
}

// parsePyDict decodes a Python dict repr; on truncation it keeps the
// complete entries. want (nil: all) names the keys whose values are kept.
func parsePyDict(s string, want map[string]string) map[string]any {
	p := &pyParser{s: s, want: want}
	p.ws()
	if p.eof() || p.s[p.i] != '{' {
		return nil
	}
	v, _ := p.dict()
	m, _ := v.(map[string]any)
	return m
}

// parsePyArgs decodes "k=v, k2=v2, ..." (the inside of a dataclass repr).
// want (nil: all) names the keys whose values are kept.
func parsePyArgs(s string, want map[string]string) map[string]any {
	p := &pyParser{s: s, want: want}
	out := map[string]any{}
	for {
		p.ws()
		start := p.i
		for !p.eof() && p.s[p.i] != '=' && p.s[p.i] != ',' {
			p.i++
		}
		if p.eof() || p.s[p.i] != '=' {
			return out
		}
		key := strings.TrimSpace(p.s[start:p.i])
		p.i++
		drop := !p.keeps(key)
		if drop {
			p.skip++
		}
		v, ok := p.value()
		if drop {
			p.skip--
		}
		if !ok {
			return out // truncated value: drop it
		}
		if !drop {
			out[key] = v
		}
		p.ws()
		if p.eof() || p.s[p.i] != ',' {
			return out
		}
		p.i++
	}
}

// parseKV decodes space separated KEY=VALUE pairs.
func parseKV(s string) map[string]any {
	out := map[string]any{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = v
		}
	}
	return out
}

func parseNumber(tok string) (any, bool) {
	t := strings.ReplaceAll(tok, ",", "")
	// Every number the parsers below take starts, after its sign, with a
	// digit or '.' (the words they also take, "inf" and "nan", are
	// refused below): a word fails here without their error values.
	if d := strings.TrimLeft(t, "+-"); d == "" || d[0] != '.' && (d[0] < '0' || d[0] > '9') {
		return nil, false
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return n, true
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f, true
	}
	return nil, false
}

// ShapeValue is the shape value of v for shape key key (normalizeValue):
// what a line reporting key = v sets.
func ShapeValue(key string, v any) any { return normalizeValue(key, v) }

// normalizeValue turns a captured or parsed value into a shape value:
// numbers become int64/float64 (commas removed), "True"/"False" become
// bools, a one-element list becomes its element, and keys ending in
// "_bytes" accept unit suffixes ("10.29 GiB").
func normalizeValue(key string, v any) any {
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			return nil
		}
		return normalizeValue(key, x[0])
	case map[string]any:
		return nil
	case int:
		return int64(x)
	case string:
		s := strings.TrimSpace(x)
		switch s {
		case "True", "true":
			return true
		case "False", "false":
			return false
		case "None", "":
			return nil
		}
		if strings.HasSuffix(key, "_bytes") {
			if b, ok := domain.ParseByteCount(s); ok {
				return b
			}
		}
		if n, ok := parseNumber(s); ok {
			return n
		}
		return s
	case float64:
		if strings.HasSuffix(key, "_bytes") {
			return int64(math.Round(x))
		}
	}
	return v
}
