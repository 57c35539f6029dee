package ingest

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// CleanMessage turns a raw MESSAGE value into display text: one trailing
// '\n' is dropped (conmon appends one), ANSI escape sequences (CSI, OSC and
// other ESC sequences) and control characters other than '\t', '\n' and '\r'
// are removed, invalid UTF-8 becomes U+FFFD, each '\r' (tqdm progress) starts
// a new line with empty '\r' segments dropped, and trailing spaces and tabs
// of every line are trimmed. The result may hold several lines.
func CleanMessage(raw []byte) string {
	s, _ := cleanMessage(nil, raw)
	return s
}

// cleanMessage is CleanMessage with scratch as the buffer for the text
// without escapes (returned for reuse): a reader cleans one message after
// the other.
func cleanMessage(scratch, raw []byte) (string, []byte) {
	if n := len(raw); n > 0 && raw[n-1] == '\n' {
		raw = raw[:n-1]
	}
	if isPlain(raw) {
		return string(raw), scratch
	}
	b := stripEscapes(scratch[:0], raw)
	scratch = b
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	if !needsSplit(b) {
		return string(b), scratch
	}
	return splitLines(b), scratch
}

// needsSplit reports whether splitLines would change b: a '\r' in it, or a
// line ending in a space or tab.
func needsSplit(b []byte) bool {
	if bytes.IndexByte(b, '\r') >= 0 {
		return true
	}
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		end := len(b)
		if j >= 0 {
			end = i + j
		}
		if end > i && (b[end-1] == ' ' || b[end-1] == '\t') {
			return true
		}
		if j < 0 {
			return false
		}
		i = end + 1
	}
}

// isPlain reports whether raw needs no cleaning: printable ASCII or UTF-8
// with '\n'/'\t' only, and no line ending in a space or tab.
func isPlain(raw []byte) bool {
	// Skip words of eight printable ASCII bytes (no control, DEL or
	// non-ASCII byte, so no '\n' either) without looking at each byte.
	i := 0
	for ; i+8 <= len(raw); i += 8 {
		if w := binary.LittleEndian.Uint64(raw[i:]); controlBytes(w)|w&msb != 0 {
			break
		}
	}
	for ; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\n':
			if i > 0 && (raw[i-1] == ' ' || raw[i-1] == '\t') {
				return false
			}
		case c == '\t':
		case c < 0x20 || c == 0x7f:
			return false
		case c >= 0x80:
			return false // let the slow path validate UTF-8
		}
	}
	if n := len(raw); n > 0 && (raw[n-1] == ' ' || raw[n-1] == '\t') {
		return false
	}
	return true
}

// stripEscapes removes ESC sequences and C0 controls except '\t', '\n', '\r'.
// It appends to out. Runs between controls are copied at once, found
// eight bytes at a time: coloured lines hold a few escapes.
func stripEscapes(out, raw []byte) []byte {
	for i := 0; i < len(raw); {
		j := i + controlAt(raw[i:])
		out = append(out, raw[i:j]...)
		if j == len(raw) {
			break
		}
		switch c := raw[j]; c {
		case 0x1b:
			i = skipEscape(raw, j)
			continue
		case '\t', '\n', '\r':
			out = append(out, c)
		}
		i = j + 1
	}
	return out
}

// controlAt returns the index of the first C0 control or DEL in b, or
// len(b).
func controlAt(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if m := controlBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == 0x7f {
			return i
		}
	}
	return i
}

// controlBytes returns a word with the high bit set at (at least) the
// first byte of w, in memory order, that is a C0 control or DEL, and at
// none before it (zero: none of them); the bytes before it do not borrow.
func controlBytes(w uint64) uint64 {
	return ((w-0x20*lsb)&^w | equalBytes(w, 0x7f)) & msb
}

// skipEscape returns the index just past the escape sequence starting at
// raw[i] == ESC (ECMA-48: CSI, OSC/DCS/SOS/PM/APC strings, nF/Fp/Fe/Fs).
func skipEscape(raw []byte, i int) int {
	j := i + 1
	if j >= len(raw) {
		return j
	}
	switch c := raw[j]; {
	case c == '[': // CSI: parameters 0x30-0x3F, intermediates 0x20-0x2F, final 0x40-0x7E
		j++
		for j < len(raw) && raw[j] >= 0x20 && raw[j] <= 0x3f {
			j++
		}
		if j < len(raw) && raw[j] >= 0x40 && raw[j] <= 0x7e {
			j++
		}
		return j
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		// string terminated by BEL or ST (ESC \); stop at a newline if
		// unterminated so a stray OSC cannot swallow the rest.
		j++
		for j < len(raw) {
			switch raw[j] {
			case 0x07:
				return j + 1
			case 0x1b:
				if j+1 < len(raw) && raw[j+1] == '\\' {
					return j + 2
				}
				return j
			case '\n':
				return j
			}
			j++
		}
		return j
	case c >= 0x20 && c <= 0x2f: // nF: intermediates then a final byte
		for j < len(raw) && raw[j] >= 0x20 && raw[j] <= 0x2f {
			j++
		}
		if j < len(raw) && raw[j] >= 0x30 && raw[j] <= 0x7e {
			j++
		}
		return j
	case c >= 0x30 && c <= 0x7e: // two-byte sequence (ESC 7, ESC =, ESC M, ...)
		return j + 1
	}
	return j // lone ESC
}

// splitLines turns '\r' into line breaks, drops empty '\r' segments and trims
// trailing blanks of each line.
func splitLines(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	first := true
	emit := func(seg []byte) {
		if !first {
			sb.WriteByte('\n')
		}
		first = false
		sb.Write(seg)
	}
	for {
		line, rest, found := bytes.Cut(b, []byte{'\n'})
		if bytes.IndexByte(line, '\r') < 0 {
			emit(bytes.TrimRight(line, " \t"))
		} else {
			for _, seg := range bytes.Split(line, []byte{'\r'}) {
				if seg = bytes.TrimRight(seg, " \t"); len(seg) > 0 {
					emit(seg)
				}
			}
		}
		if !found {
			break
		}
		b = rest
	}
	return sb.String()
}
