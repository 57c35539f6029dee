package catalog

import (
	"strings"
	"unicode"
)

// Python source is read with a small tokenizer following the lexical rules of
// the Python Language Reference ("Lexical analysis": string prefixes, triple
// quotes, implicit concatenation of adjacent literals, f-string replacement
// fields, explicit and implicit line joining). It is not a parser: the
// extractor only needs calls and their first argument.

type pyTokKind uint8

const (
	pyName pyTokKind = iota
	pyString
	pyNumber
	pyOp
	pyNewline // end of a logical line
)

type pyTok struct {
	kind   pyTokKind
	text   string // name, operator, or a string's decoded body
	fstr   bool   // an f-string: {…} are holes
	line   int
	indent int // indentation of the logical line the token starts
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// pyTokenize splits src into tokens. It always advances, so any input ends;
// unterminated strings run to the end of the input.
func pyTokenize(src []byte) []pyTok {
	var toks []pyTok
	line, depth := 1, 0
	atLineStart, indent := true, 0
	i := 0
	for i < len(src) {
		c := src[i]
		if atLineStart {
			col := 0
			for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
				col++
				i++
			}
			if i < len(src) && (src[i] == '\n' || src[i] == '#' || src[i] == '\r') {
				// blank or comment line: no indentation change
			} else {
				indent = col
				atLineStart = false
			}
			if i >= len(src) {
				break
			}
			c = src[i]
		}
		switch {
		case c == '\n':
			line++
			i++
			if depth == 0 && len(toks) > 0 && toks[len(toks)-1].kind != pyNewline {
				toks = append(toks, pyTok{kind: pyNewline, line: line - 1, indent: indent})
			}
			if depth == 0 {
				atLineStart = true
			}
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || src[i+1] == '\r'):
			i += 2
			if src[i-1] == '\r' && i < len(src) && src[i] == '\n' {
				i++
			}
			line++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdent(src[j]) {
				j++
			}
			word := string(src[i:j])
			if j < len(src) && (src[j] == '\'' || src[j] == '"') && isStrPrefix(word) {
				tok, n, nl := pyReadString(src[j:], strings.ToLower(word))
				tok.line, tok.indent = line, indent
				toks = append(toks, tok)
				line += nl
				i = j + n
				continue
			}
			toks = append(toks, pyTok{kind: pyName, text: word, line: line, indent: indent})
			i = j
		case c == '\'' || c == '"':
			tok, n, nl := pyReadString(src[i:], "")
			tok.line, tok.indent = line, indent
			toks = append(toks, tok)
			line += nl
			i += n
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (isIdent(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, pyTok{kind: pyNumber, text: string(src[i:j]), line: line, indent: indent})
			i = j
		default:
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth > 0 {
					depth--
				}
			}
			toks = append(toks, pyTok{kind: pyOp, text: string(c), line: line, indent: indent})
			i++
		}
	}
	return toks
}

func isStrPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "r", "u", "f", "b", "br", "rb", "fr", "rf":
		return true
	}
	return false
}

// pyReadString reads one string literal at s[0] (a quote). It returns the token,
// the bytes consumed and the newlines inside.
func pyReadString(s []byte, prefix string) (pyTok, int, int) {
	q := s[0]
	triple := len(s) >= 3 && s[1] == q && s[2] == q
	start := 1
	if triple {
		start = 3
	}
	raw := strings.Contains(prefix, "r")
	var b strings.Builder
	nl := 0
	i := start
	for i < len(s) {
		c := s[i]
		if c == '\n' {
			nl++
			if !triple { // unterminated single-quoted string: stop at the line end
				break
			}
		}
		if c == '\\' && i+1 < len(s) {
			if raw {
				b.WriteByte(c)
				b.WriteByte(s[i+1])
			} else {
				switch s[i+1] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case '\n':
					nl++
				case '\\', '\'', '"':
					b.WriteByte(s[i+1])
				default:
					b.WriteByte(c)
					b.WriteByte(s[i+1])
				}
			}
			if s[i+1] == '\n' && raw {
				nl++
			}
			i += 2
			continue
		}
		if c == q {
			if !triple {
				i++
				break
			}
			if i+2 < len(s) && s[i+1] == q && s[i+2] == q {
				i += 3
				break
			}
		}
		if b.Len() < MaxFormatBytes {
			b.WriteByte(c)
		}
		i++
	}
	return pyTok{kind: pyString, text: b.String(), fstr: strings.Contains(prefix, "f")}, i, nl
}

// pyLogMethods are the logger methods read, and what they can announce.
var pyLogMethods = map[string]bool{"error": true, "critical": true, "exception": true, "fatal": true, "info": false, "warning": false}

var pyLoggers = map[string]bool{"logger": true, "logging": true, "log": true, "LOGGER": true, "_logger": true, "xlogger": true, "init_logger": false}

// PyExtract lists the raise statements and logging calls of one Python file.
func PyExtract(path string, src []byte) []Raw {
	if len(src) > MaxFileBytes {
		return nil
	}
	toks := pyTokenize(src)
	var out []Raw
	type scope struct {
		indent int
		name   string
	}
	var scopes []scope
	lineStart := true
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == pyNewline {
			lineStart = true
			continue
		}
		if lineStart {
			lineStart = false
			for len(scopes) > 0 && scopes[len(scopes)-1].indent >= t.indent {
				scopes = scopes[:len(scopes)-1]
			}
			j := i
			if t.kind == pyName && t.text == "async" && j+1 < len(toks) {
				j++
			}
			if toks[j].kind == pyName && (toks[j].text == "def" || toks[j].text == "class") && j+1 < len(toks) && toks[j+1].kind == pyName {
				scopes = append(scopes, scope{t.indent, toks[j+1].text})
			}
		}
		fn := "" // the innermost enclosing def or class
		if len(scopes) > 0 {
			fn = scopes[len(scopes)-1].name
		}
		if t.kind != pyName {
			continue
		}
		if t.text == "raise" {
			j := i + 1
			var exc []string
			for j < len(toks) && toks[j].kind == pyName {
				exc = append(exc, toks[j].text)
				if j+1 < len(toks) && toks[j+1].kind == pyOp && toks[j+1].text == "." {
					j += 2
					continue
				}
				j++
				break
			}
			call := j < len(toks) && toks[j].kind == pyOp && toks[j].text == "("
			if len(exc) == 0 || (!call && unicode.IsLower(rune(exc[len(exc)-1][0]))) {
				// "raise e": a caught exception raised again, catalogued
				// where it was first raised.
				continue
			}
			r := Raw{File: path, Line: t.line, Func: fn, Call: "raise", Exc: exc[len(exc)-1], Lang: "py"}
			if call {
				r.Format, r.Holes = pyFirstArg(toks, j+1)
			}
			out = append(out, r)
			continue
		}
		// logger.error( / self.logger.error( / logging.error(
		if pyLoggers[t.text] && i+3 < len(toks) && toks[i+1].text == "." && toks[i+2].kind == pyName && toks[i+3].text == "(" {
			fatal, ok := pyLogMethods[toks[i+2].text]
			if !ok {
				continue
			}
			r := Raw{File: path, Line: t.line, Func: fn, Call: "logger." + toks[i+2].text, Lang: "py", Info: !fatal}
			r.Format, r.Holes = pyFirstArg(toks, i+4)
			if r.Format == "" {
				// No literal text (traceback.format_exc(), an exception
				// object): it prints what another statement raised, which
				// is catalogued where it was raised.
				continue
			}
			out = append(out, r)
		}
	}
	return out
}

// pyFirstArg renders the first argument of a call whose tokens start at
// toks[i] as a format: string pieces kept, other expressions as holes
// "{…}"; %-formatting and .format() keep their own holes.
func pyFirstArg(toks []pyTok, i int) (string, bool) {
	var b strings.Builder
	depth := 0
	holes := false
	for ; i < len(toks) && b.Len() < MaxFormatBytes; i++ {
		t := toks[i]
		if t.kind == pyOp {
			switch t.text {
			case "(", "[", "{":
				depth++
				if depth > MaxArgDepth {
					return b.String(), holes
				}
			case ")", "]", "}":
				if depth == 0 {
					return b.String(), holes
				}
				depth--
			case ",":
				if depth == 0 {
					return b.String(), holes
				}
			}
			continue
		}
		if t.kind == pyNewline {
			return b.String(), holes
		}
		if depth > 0 {
			continue // inside .format(...), str(x) and the like
		}
		switch t.kind {
		case pyString:
			s := t.text
			if t.fstr {
				holes = holes || strings.Contains(s, "{")
			} else {
				s = strings.NewReplacer("{{", "{", "}}", "}").Replace(s)
				if strings.Contains(s, "%") || strings.Contains(s, "{") {
					holes = true
				}
			}
			b.WriteString(s)
		case pyName:
			if t.text == "format" || t.text == "str" || t.text == "repr" || t.text == "f" {
				continue
			}
			// a variable concatenated in: its value is a hole
			if i > 0 && toks[i-1].kind == pyOp && toks[i-1].text == "." {
				continue
			}
			prevPlus := i > 0 && toks[i-1].kind == pyOp && toks[i-1].text == "+"
			nextPlus := i+1 < len(toks) && toks[i+1].kind == pyOp && toks[i+1].text == "+"
			if prevPlus || nextPlus {
				b.WriteString("{" + t.text + "}")
				holes = true
			}
		}
	}
	return b.String(), holes
}
