package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// fastJSONRecord parses the flat object journalctl prints (string keys;
// string, null, number, boolean or array values) about 4x faster than
// encoding/json. ok is false for anything else or invalid input; the caller
// then uses encoding/json, which also words the error.
// over is set when it refused the record for having more than
// maxRecordFields fields.
func fastJSONRecord(s []byte) (rec Record, ok, over bool) {
	var r flatRecord
	var kc keyCache
	// The values share one copy of s (and one buffer for decoded values)
	// instead of one allocation each.
	if !parseFlat(&r, &kc, append([]byte(nil), s...)) {
		return nil, false, r.over
	}
	return r.toMap(), true, false
}

// maxArena caps the decode buffer a flatRecord keeps between lines.
const maxArena = 1 << 20

// parseFlat is fastJSONRecord into r, without a map: values alias s or
// r.arena, so they are valid until s changes or r is parsed into again.
func parseFlat(r *flatRecord, kc *keyCache, s []byte) bool {
	return parseInto(r, kc, &jscan{s: s})
}

// parseFlatLine is parseFlat of the line at the start of s, which goes on
// past the line (the rest of the read buffer): it returns the line's
// length, the index of the '\n' that ends it. The line must start with
// '{'. ok is false where parseFlat of the line, cut at its first '\n' and
// trimmed of trailing blanks and '\r', would be false, and for a line
// that does not end within s; the caller then reads the line as a line.
// It saves finding the line's end in a pass of its own before parsing it.
func parseFlatLine(r *flatRecord, kc *keyCache, s []byte) (n int, ok bool) {
	p := &jscan{s: s, nl: true}
	ok = parseInto(r, kc, p)
	return p.i, ok
}

// parseInto parses p's object into r, decoding into r's arena when it has
// room for all of p.s, and keeps the buffer used as the arena.
func parseInto(r *flatRecord, kc *keyCache, p *jscan) bool {
	r.reset()
	if cap(r.arena) >= len(p.s) {
		p.out = r.arena[:0]
	}
	ok := p.object(r, kc)
	if p.out != nil && cap(p.out) <= maxArena {
		r.arena = p.out[:0]
	}
	return ok
}

// object parses a whole line holding one object into r. With p.nl the
// line ends at the first '\n' of s, where p.i is left.
func (p *jscan) object(r *flatRecord, kc *keyCache) bool {
	p.ws()
	if !p.eat('{') {
		return false
	}
	p.ws()
	if p.eat('}') {
		p.ws()
		return p.atEnd()
	}
	kc.hits = kc.hits[:0]
	for i := 0; ; i++ {
		if i == maxRecordFields {
			r.over = true
			return false
		}
		p.ws()
		if n := kc.sameRun(p, r, i); n > 0 {
			i += n - 1
		} else if start := p.i; kc.same(p, r, i) {
			kc.hits = append(kc.hits, memberHit{i: i, start: start, end: p.i})
		} else {
			name, slot, kept, ok := p.key(kc, i)
			if !ok {
				return false
			}
			p.ws()
			if !p.eat(':') {
				return false
			}
			p.ws()
			var val []byte
			if slot == slotDropped && p.i < len(p.s) && p.s[p.i] == '"' {
				val, ok = p.skipStr()
			} else {
				val, ok = p.value(false)
			}
			if !ok {
				return false
			}
			r.add(name, slot, kept, val)
			kc.remember(i, p.s[start:p.i], name, slot, kept, val)
		}
		p.ws()
		if p.eat(',') {
			continue
		}
		if p.eat('}') {
			break
		}
		return false
	}
	p.ws()
	if !p.atEnd() {
		return false
	}
	kc.newRuns(p.s)
	return true
}

// atEnd says whether the scanner is at the end of its line.
func (p *jscan) atEnd() bool {
	if p.nl {
		return p.i < len(p.s) && p.s[p.i] == '\n'
	}
	return p.i == len(p.s)
}

// key parses the i-th key of a record. Records of one stream list the same
// keys in the same order, so the key the cache expects is compared in place
// before the string is scanned.
func (p *jscan) key(kc *keyCache, i int) (name string, slot int8, kept bool, ok bool) {
	if i < len(kc.names) && kc.plain[i] {
		want := kc.names[i]
		if end := p.i + len(want) + 2; end <= len(p.s) && p.s[p.i] == '"' && p.s[end-1] == '"' &&
			string(p.s[p.i+1:end-1]) == want {
			p.i = end
			return want, kc.slots[i], kc.kept[i], true
		}
	}
	key, ok := p.str()
	if !ok {
		return "", 0, false, false
	}
	name, slot, kept = kc.name(i, key)
	return name, slot, kept, true
}

// skipStr passes over a string value nobody reads (a field the reader was
// told not to keep): it finds the closing quote without checking or
// decoding the body. The value returned is only non-nil, as a string is.
func (p *jscan) skipStr() ([]byte, bool) {
	i := p.i + 1
	for {
		j := p.indexQuote(p.s[i:])
		if j < 0 {
			return nil, false
		}
		i += j
		k := i
		for k > p.i+1 && p.s[k-1] == '\\' {
			k--
		}
		i++
		if (i-1-k)%2 == 0 { // an even run of backslashes: the quote ends it
			p.i = i
			return empty, true
		}
	}
}

// fieldNames are the journal fields journalctl prints most: their names
// are shared instead of allocated per record (read-only, so safe for
// concurrent parsers).
var fieldNames = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"MESSAGE", "PRIORITY", "SYSLOG_FACILITY", "SYSLOG_IDENTIFIER", "SYSLOG_PID",
		"SYSLOG_TIMESTAMP", "_PID", "_UID", "_GID", "_COMM", "_EXE", "_CMDLINE", "_CAP_EFFECTIVE", "_TRANSPORT",
		"_STREAM_ID", "_LINE_BREAK", "_SYSTEMD_CGROUP", "_SYSTEMD_UNIT", "_SYSTEMD_USER_UNIT", "_SYSTEMD_SLICE",
		"_SYSTEMD_USER_SLICE", "_SYSTEMD_OWNER_UID", "_SYSTEMD_SESSION", "_SYSTEMD_INVOCATION_ID", "_AUDIT_SESSION",
		"_AUDIT_LOGINUID", "_SELINUX_CONTEXT", "_SOURCE_REALTIME_TIMESTAMP", "_SOURCE_MONOTONIC_TIMESTAMP",
		"_BOOT_ID", "_MACHINE_ID", "_HOSTNAME", "_RUNTIME_SCOPE", "_NAMESPACE", "__CURSOR", "__REALTIME_TIMESTAMP",
		"__MONOTONIC_TIMESTAMP", "__SEQNUM", "__SEQNUM_ID", "UNIT", "USER_UNIT", "INVOCATION_ID",
		"USER_INVOCATION_ID", "MESSAGE_ID", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "TID", "JOB_ID", "JOB_TYPE",
		"JOB_RESULT", "UNIT_RESULT", "EXIT_CODE", "EXIT_STATUS", "N_RESTARTS", "ERRNO", "OBJECT_PID",
		"OBJECT_SYSTEMD_UNIT", "CONTAINER_ID", "CONTAINER_ID_FULL", "CONTAINER_NAME", "CONTAINER_TAG",
		"CONTAINER_PARTIAL_MESSAGE", "CONTAINER_PARTIAL_ID", "CONTAINER_PARTIAL_ORDINAL", "CONTAINER_PARTIAL_LAST",
		"IMAGE_NAME", "PODMAN_EVENT", "PODMAN_TYPE", "PODMAN_NAME", "PODMAN_ID", "PODMAN_TIME"} {
		m[k] = k
	}
	return m
}()

// fieldName returns key as a string, shared when it is a common field.
func fieldName(key []byte) string {
	if k, ok := fieldNames[string(key)]; ok {
		return k
	}
	return string(key)
}

// jscan is a JSON scanner over s. Decoded strings and byte arrays go to
// out, which is allocated with room for all of s at first need: decoding
// never lengthens a value, so out never moves and earlier values stay valid.
type jscan struct {
	s   []byte
	i   int
	out []byte
	// nl: s goes on past the line being parsed, which ends at the first
	// '\n'; white space then does not include '\n'.
	nl bool
}

// outStart makes sure out exists and returns where the next value starts.
func (p *jscan) outStart() int {
	if p.out == nil {
		p.out = make([]byte, 0, len(p.s))
	}
	return len(p.out)
}

// empty is the value of an empty array: empty, but not nil (nil is null).
var empty = []byte{}

func (p *jscan) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\r':
			p.i++
		case '\n':
			if p.nl {
				return
			}
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
func (p *jscan) value(inArray bool) (v []byte, ok bool) {
	if p.i >= len(p.s) {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '"':
		v, ok := p.str()
		return v[:len(v):len(v)], ok
	case c == 'n':
		return nil, p.lit("null")
	case (c == 't' || c == 'f' || c == '-' || (c >= '0' && c <= '9')) && !inArray:
		start := p.i
		switch c {
		case 't':
			ok = p.lit("true")
		case 'f':
			ok = p.lit("false")
		default:
			ok = p.number()
		}
		if !ok {
			return nil, false
		}
		return p.s[start:p.i:p.i], true
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
		return empty, true
	}
	if p.i >= len(p.s) {
		return nil, false
	}
	if c := p.s[p.i]; c >= '0' && c <= '9' {
		return p.byteArray()
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

// byteArray parses the numbers of a byte array from its first digit on
// (scanByteArray), into the scanner's output buffer.
func (p *jscan) byteArray() ([]byte, bool) {
	o := p.outStart()
	out, next, err := scanByteArray(p.out, p.s, p.i, p.nl)
	if err != nil {
		return nil, false
	}
	p.i, p.out = next, out
	return out[o:len(out):len(out)], true
}

// Errors of scanByteArray.
var (
	errByteAbove255   = errors.New("byte array element above 255")
	errByteElement    = errors.New("empty or malformed byte array element")
	errByteArrayUnend = errors.New("unterminated byte array")
)

// scanByteArray is the one decoder of journalctl's byte arrays (the JSON
// form of a MESSAGE with escapes, colours or invalid UTF-8): s[i] is the
// array's first digit; the numbers up to the closing ']' are appended to
// dst as bytes, and next is the index after the ']'. Elements are JSON
// numbers 0-255 without leading zeros, separated by commas and optional
// white space. journalctl prints most escaped or coloured MESSAGEs this
// way, hence the plain loop over s rather than a scanner's helpers. With
// nl (a line parsed in place, parseFlatLine) '\n' is not white space.
func scanByteArray(dst, s []byte, i int, nl bool) (out []byte, next int, err error) {
	// Long arrays go 16 bytes at a time first, where the CPU can
	// (scanBlocks); the loop below takes what is left.
	out, i = scanBlocks(dst, s, i)
	for {
		// Fast path: journalctl prints "27,91,49," with no spaces, so most
		// elements are 1-3 digits and a comma.
		if i+4 <= len(s) {
			d0, d1, d2 := s[i]-'0', s[i+1]-'0', s[i+2]-'0'
			switch {
			case d0 <= 9 && s[i+1] == ',':
				out = append(out, d0)
				i += 2
				continue
			case d0-1 <= 8 && d1 <= 9 && s[i+2] == ',':
				out = append(out, d0*10+d1)
				i += 3
				continue
			case d0-1 <= 1 && d1 <= 9 && d2 <= 9 && s[i+3] == ',':
				if n := int(d0)*100 + int(d1)*10 + int(d2); n <= 255 {
					out = append(out, byte(n))
					i += 4
					continue
				}
			}
		}
		for i < len(s) && isJSONSpace(s[i]) && !(nl && s[i] == '\n') {
			i++
		}
		n, digits := 0, 0
		for i < len(s) {
			d := s[i] - '0'
			if d > 9 {
				break
			}
			n = n*10 + int(d)
			i++
			digits++
			if n > 255 {
				return nil, 0, errByteAbove255
			}
			if digits > 3 {
				return nil, 0, errByteElement // leading zeros
			}
		}
		if digits == 0 || (digits > 1 && s[i-digits] == '0') {
			return nil, 0, errByteElement
		}
		out = append(out, byte(n))
		for i < len(s) && isJSONSpace(s[i]) && !(nl && s[i] == '\n') {
			i++
		}
		if i < len(s) && s[i] == ',' {
			i++
			continue
		}
		if i < len(s) && s[i] == ']' {
			return out, i + 1, nil
		}
		if i >= len(s) {
			return nil, 0, errByteArrayUnend
		}
		return nil, 0, fmt.Errorf("unexpected %q in byte array", s[i])
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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
	start, s := p.i, p.s
	// Eight bytes at a time until the first byte that is not plain ASCII
	// text: most values are short ASCII without escapes, and a per-byte
	// check of the body was a sixth of reading a journal.
	i := start
	for ; i+8 <= len(s); i += 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(s[i:])); m != 0 {
			i += bits.TrailingZeros64(m) / 8
			break
		}
	}
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			p.i = i + 1
			return s[start:i], true
		case c == '\\' || c >= 0x80:
			return p.strSlow(start)
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// Bytes of 8 in a word, for specialBytes.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialBytes returns a word with the high bit set at (at least) the first
// byte of w, in memory order, that is a quote, a backslash, a control
// character or not ASCII, and at none before it (zero: none of them).
func specialBytes(w uint64) uint64 {
	return (equalBytes(w, '"') | equalBytes(w, '\\') | (w - 0x20*lsb) | w) & msb
}

// equalBytes is the zero-byte test on w ^ c in every byte: under msb, the
// high bit is set at the first byte of w, in memory order, that equals c,
// and at none before it (the bytes after it may borrow).
func equalBytes(w uint64, c byte) uint64 {
	x := w ^ (uint64(c) * lsb)
	return (x - lsb) &^ x
}

// indexQuote returns the index of the first '"' in b, or -1. With p.nl it
// is -1 once a '\n' comes first: the string does not end on its line, and
// the search stops there instead of reading on into the lines after it.
func (p *jscan) indexQuote(b []byte) int {
	if !p.nl {
		return bytes.IndexByte(b, '"')
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := (equalBytes(w, '"') | equalBytes(w, '\n')) & msb; m != 0 {
			i += bits.TrailingZeros64(m) / 8
			break
		}
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i
		case '\n':
			return -1
		}
	}
	return -1
}

// strSlow is str for a string that holds escapes or non-ASCII bytes.
func (p *jscan) strSlow(start int) ([]byte, bool) {
	p.i = start
	j := p.indexQuote(p.s[start:])
	if j < 0 {
		return nil, false
	}
	body := p.s[start : start+j]
	if bytes.IndexByte(body, '\\') >= 0 {
		return p.strEscaped(start)
	}
	for _, c := range body {
		if c < 0x20 {
			return nil, false
		}
	}
	if !utf8.Valid(body) {
		return nil, false // encoding/json replaces invalid UTF-8: let it
	}
	p.i = start + j + 1
	return body, true
}

// strEscaped continues str when the string holds escapes.
func (p *jscan) strEscaped(start int) ([]byte, bool) {
	o := p.outStart()
	out := append(p.out, p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			p.out = out
			if !utf8.Valid(out[o:]) {
				return nil, false // encoding/json replaces invalid UTF-8: let it
			}
			return out[o:len(out):len(out)], true
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
