package catalog

import (
	"strings"
)

// C and C++ source is scanned as tokens following the lexical rules of the C
// and C++ standards (comments, string and character literals, raw strings
// R"d(…)d", adjacent literals concatenated). Calls are recognised by name;
// the enclosing function is the last name before a "(...)" that opens a
// brace block at file or namespace level.

// cFatal are the calls that report a fatal error; cInfo those read for
// readiness and milestones.
var cFatal = map[string]bool{
	"LOG_ERR": true, "LOG_ERROR": true, "LLAMA_LOG_ERROR": true, "GGML_LOG_ERROR": true,
	"GGML_ABORT": true, "GGML_ASSERT": true, "SRV_ERR": true, "SLT_ERR": true, "QUE_ERR": true,
	"fprintf": true, "throw": true,
}

var cInfo = map[string]bool{"LOG_INF": true, "LOG_INFO": true, "LLAMA_LOG_INFO": true, "SRV_INF": true, "GGML_LOG_INFO": true, "printf": true}

type cTok struct {
	kind byte // 'n' name, 's' string, 'o' operator, '#': preprocessor line
	text string
	line int
}

func cTokenize(src []byte) []cTok {
	var toks []cTok
	line := 1
	i := 0
	bol := true
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
			bol = true
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '#' && bol:
			// preprocessor line, with its continuations
			for i < len(src) && src[i] != '\n' {
				if src[i] == '\\' && i+1 < len(src) && src[i+1] == '\n' {
					line++
					i++
				}
				i++
			}
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			i += 2
			for i < len(src) && !(src[i] == '*' && i+1 < len(src) && src[i+1] == '/') {
				if src[i] == '\n' {
					line++
				}
				i++
			}
			i += 2
			continue
		}
		bol = false
		switch {
		case c == 'R' && i+1 < len(src) && src[i+1] == '"':
			// raw string R"delim( ... )delim"
			j := i + 2
			for j < len(src) && src[j] != '(' && j-i < 20 {
				j++
			}
			delim := ")" + string(src[i+2:min(j, len(src))]) + "\""
			k := j + 1
			end := strings.Index(string(src[min(k, len(src)):]), delim)
			body := ""
			if end < 0 {
				body = string(src[min(k, len(src)):])
				k = len(src)
			} else {
				body = string(src[k : k+end])
				k += end + len(delim)
			}
			toks = append(toks, cTok{'s', capStr(body), line})
			line += strings.Count(body, "\n")
			i = k
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdent(src[j]) {
				j++
			}
			w := string(src[i:j])
			// encoding prefixes u8"", L"", u"", U""
			if j < len(src) && src[j] == '"' && (w == "u8" || w == "L" || w == "u" || w == "U") {
				i = j
				continue
			}
			toks = append(toks, cTok{'n', w, line})
			i = j
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			for j < len(src) && src[j] != c && src[j] != '\n' {
				if src[j] == '\\' && j+1 < len(src) {
					switch src[j+1] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case '\n':
						line++
					default:
						b.WriteByte(src[j+1])
					}
					j += 2
					continue
				}
				if b.Len() < MaxFormatBytes {
					b.WriteByte(src[j])
				}
				j++
			}
			if c == '"' {
				toks = append(toks, cTok{'s', b.String(), line})
			} else {
				toks = append(toks, cTok{'o', "'", line})
			}
			i = j + 1
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (isIdent(src[j]) || src[j] == '.' || src[j] == '\'') {
				j++
			}
			toks = append(toks, cTok{'0', string(src[i:j]), line})
			i = j
		default:
			if c == ':' && i+1 < len(src) && src[i+1] == ':' {
				toks = append(toks, cTok{'o', "::", line})
				i += 2
				continue
			}
			toks = append(toks, cTok{'o', string(c), line})
			i++
		}
	}
	return toks
}

func capStr(s string) string {
	if len(s) > MaxFormatBytes {
		return s[:MaxFormatBytes]
	}
	return s
}

// CExtract lists the fatal and informational print calls of one C or C++ file.
func CExtract(path string, src []byte) []Raw {
	if len(src) > MaxFileBytes {
		return nil
	}
	toks := cTokenize(src)
	var out []Raw
	depth := 0
	fn := ""
	fnDepth := -1
	lastCallName := "" // last name followed by "(" at the current statement
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == 'o' {
			switch t.text {
			case "{":
				if fnDepth < 0 && lastCallName != "" && prevCloses(toks, i) {
					fn, fnDepth = lastCallName, depth
				}
				depth++
				lastCallName = ""
			case "}":
				if depth > 0 {
					depth--
				}
				if depth == fnDepth {
					fn, fnDepth = "", -1
				}
				lastCallName = ""
			case ";":
				lastCallName = ""
			}
			continue
		}
		if t.kind != 'n' {
			continue
		}
		if i+1 < len(toks) && toks[i+1].text == "(" && fnDepth < 0 && !cKeyword[t.text] {
			lastCallName = t.text
		}
		name := t.text
		if name == "throw" {
			// throw std::runtime_error(...) / throw std::invalid_argument(...)
			j := i + 1
			exc := ""
			for j < len(toks) && (toks[j].kind == 'n' || toks[j].text == "::") {
				if toks[j].kind == 'n' {
					exc = toks[j].text
				}
				j++
			}
			if exc == "" || j >= len(toks) || toks[j].text != "(" {
				continue
			}
			f, holes := cArgs(toks, j+1, 0)
			out = append(out, Raw{File: path, Line: t.line, Func: fn, Call: "throw", Exc: exc, Format: f, Holes: holes, Lang: "c"})
			continue
		}
		fatal, known := cFatal[name]
		info := cInfo[name]
		if !(known && fatal) && !info {
			continue
		}
		if i+1 >= len(toks) || toks[i+1].text != "(" {
			continue
		}
		if i > 0 && (toks[i-1].text == "define" || toks[i-1].text == "." || toks[i-1].text == ">") {
			continue
		}
		skip := 0
		if name == "fprintf" {
			if i+2 >= len(toks) || toks[i+2].text != "stderr" {
				continue
			}
			skip = 1
		}
		if name == "GGML_ASSERT" {
			cond := cRaw(toks, i+2)
			out = append(out, Raw{File: path, Line: t.line, Func: fn, Call: name, Format: "GGML_ASSERT(" + cond + ") failed", Lang: "c"})
			continue
		}
		f, holes := cArgs(toks, i+2, skip)
		if f == "" {
			continue
		}
		out = append(out, Raw{File: path, Line: t.line, Func: fn, Call: name, Format: f, Holes: holes, Lang: "c", Info: info})
	}
	return out
}

var cKeyword = map[string]bool{"if": true, "for": true, "while": true, "switch": true, "return": true, "sizeof": true, "catch": true, "defined": true}

// prevCloses: the "{" at toks[i] follows ")" (maybe with const, noexcept,
// override or a trailing return type): a function body.
func prevCloses(toks []cTok, i int) bool {
	for k := i - 1; k >= 0 && i-k < 12; k-- {
		switch toks[k].text {
		case ")":
			return true
		case "const", "noexcept", "override", "final", "->", "::", "<", ">", "*", "&":
			continue
		case ";", "}", "{", "=":
			return false
		}
		if toks[k].kind != 'n' {
			return false
		}
	}
	return false
}

// cArgs renders the arguments of a call starting at toks[i] (after "("):
// skip arguments are passed over, then the string literals of the next
// argument (adjacent ones concatenated, others joined as holes) are the
// format.
func cArgs(toks []cTok, i, skip int) (string, bool) {
	var b strings.Builder
	depth, arg := 0, 0
	holes := false
	lastWasStr := false
	for ; i < len(toks) && b.Len() < MaxFormatBytes; i++ {
		t := toks[i]
		if t.kind == 'o' {
			switch t.text {
			case "(", "[", "{":
				depth++
				if depth > MaxArgDepth {
					return b.String(), holes
				}
				continue
			case ")", "]", "}":
				if depth == 0 {
					return b.String(), holes
				}
				depth--
				continue
			case ",":
				if depth == 0 {
					arg++
					if arg > skip {
						return b.String(), holes
					}
				}
				continue
			}
		}
		if arg < skip {
			continue
		}
		if t.kind == 's' {
			b.WriteString(t.text)
			lastWasStr = true
			if strings.Contains(t.text, "%") {
				holes = true
			}
			continue
		}
		if t.kind == 'n' && t.text == "string_format" || t.text == "format" || t.text == "std" || t.text == "string" || t.text == "::" {
			continue
		}
		if t.kind == 'n' && lastWasStr && depth == 0 {
			// "text " + var: the variable's value is a hole
			b.WriteString("%s")
			holes = true
			lastWasStr = false
		}
	}
	return b.String(), holes
}

// cRaw is the source text of a parenthesised argument list, as GGML_ASSERT
// prints its condition.
func cRaw(toks []cTok, i int) string {
	var parts []string
	depth := 0
	for ; i < len(toks) && len(parts) < 64; i++ {
		t := toks[i]
		if t.text == "(" {
			depth++
		}
		if t.text == ")" {
			if depth == 0 {
				break
			}
			depth--
		}
		s := t.text
		if t.kind == 's' {
			s = `"` + s + `"`
		}
		parts = append(parts, s)
	}
	out := strings.Join(parts, " ")
	for _, r := range [][2]string{{" ( ", "("}, {"( ", "("}, {" )", ")"}, {" . ", "."}, {" -> ", "->"}, {" :: ", "::"}, {" ,", ","}, {"< =", "<="}, {"> =", ">="}, {"= =", "=="}, {"! =", "!="}, {"& &", "&&"}, {"| |", "||"}, {"- >", "->"}} {
		out = strings.ReplaceAll(out, r[0], r[1])
	}
	return out
}
