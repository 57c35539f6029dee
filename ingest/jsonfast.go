package ingest

import (
	"unicode/utf16"
	"unicode/utf8"
)

// fastJSONRecord parses the flat object journalctl prints (string keys;
// string, null, number, boolean or array values) about 4x faster than
// encoding/json. ok is false for anything else or invalid input; the caller
// then uses encoding/json, which also words the error.
func fastJSONRecord(s []byte) (rec Record, ok bool) {
	p := jscan{s: s}
	p.ws()
	if !p.eat('{') {
		return nil, false
	}
	rec = make(Record, 32)
	p.ws()
	if p.eat('}') {
		p.ws()
		return rec, p.i == len(s)
	}
	for {
		p.ws()
		key, ok := p.str()
		if !ok {
			return nil, false
		}
		p.ws()
		if !p.eat(':') {
			return nil, false
		}
		p.ws()
		val, ok := p.value(false)
		if !ok {
			return nil, false
		}
		rec[string(key)] = val
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return nil, false
	}
	p.ws()
	return rec, p.i == len(s)
}

type jscan struct {
	s []byte
	i int
}

func (p *jscan) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jscan) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *jscan) lit(word string) bool {
	if len(p.s)-p.i >= len(word) && string(p.s[p.i:p.i+len(word)]) == word {
		p.i += len(word)
		return true
	}
	return false
}

// value parses one field value; inArray is set for elements of a repeated
// field (no nested value arrays there, only byte arrays).
func (p *jscan) value(inArray bool) ([]byte, bool) {
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		v, ok := p.str()
		return append([]byte{}, v...), ok
	case c == 'n':
		return nil, p.lit("null")
	case c == 't' && !inArray:
		return []byte("true"), p.lit("true")
	case c == 'f' && !inArray:
		return []byte("false"), p.lit("false")
	case (c == '-' || (c >= '0' && c <= '9')) && !inArray:
		start := p.i
		if !p.number() {
			return nil, false
		}
		return append([]byte{}, p.s[start:p.i]...), true
	case c == '[':
		return p.array(inArray)
	}
	return nil, false
}

// array parses a byte array, or a repeated field's values (keeping the last).
func (p *jscan) array(inArray bool) ([]byte, bool) {
	p.i++
	p.ws()
	if p.eat(']') {
		return []byte{}, true
	}
	if c := p.s[p.i]; c >= '0' && c <= '9' {
		out := make([]byte, 0, 64)
		for {
			p.ws()
			n, digits := 0, 0
			for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				n = n*10 + int(p.s[p.i]-'0')
				p.i++
				if digits++; n > 255 || digits > 3 {
					return nil, false
				}
			}
			if digits == 0 || (digits > 1 && p.s[p.i-digits] == '0') {
				return nil, false
			}
			out = append(out, byte(n))
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat(']') {
				return out, true
			}
			return nil, false
		}
	}
	if inArray {
		return nil, false
	}
	var last []byte
	for {
		p.ws()
		v, ok := p.value(true)
		if !ok {
			return nil, false
		}
		last = v
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat(']') {
			return last, true
		}
		return nil, false
	}
}

// number skips a JSON number.
func (p *jscan) number() bool {
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	p.eat('-')
	if p.eat('0') {
		if p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			return false
		}
	} else if digits() == 0 {
		return false
	}
	if p.eat('.') && digits() == 0 {
		return false
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// str parses a string at p.i; the result may alias p.s.
func (p *jscan) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			return v, true
		case c == '\\':
			return p.strEscaped(start)
		case c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// strEscaped continues str when the string holds escapes.
func (p *jscan) strEscaped(start int) ([]byte, bool) {
	out := append(make([]byte, 0, p.i-start+16), p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			return nil, false
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, false
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(utf8.RuneError)
				if p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					if x, ok := p.hex4(); ok {
						if d := utf16.DecodeRune(r, x); d != utf8.RuneError {
							r2 = d
						} else {
							p.i = save
						}
					} else {
						return nil, false
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

func (p *jscan) hex4() (rune, bool) {
	if len(p.s)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.s[p.i : p.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.i += 4
	return r, true
}
