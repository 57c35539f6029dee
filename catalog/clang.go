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

// cLogCall is a logging call spelled Class::Method(...): its level as the
// log line prints it, whether that level reports a fatal error, and whether
// its first argument is a component tag (then the message is the second).
type cLogCall struct {
	level  string
	fatal  bool
	tagged bool
}

// cLogCalls are the class-qualified logging calls recognised by name, as
// engines that wrap their own logger spell them: gufo's
// Logger::Error("component", message) and spdlog's free functions. Only the
// last two parts of a qualified name count (server::Logger::Error is
// Logger::Error). Warnings are neither fatal nor milestones and are not listed.
var cLogCalls = map[string]cLogCall{
	"Logger::Error": {"ERROR", true, true}, "Logger::Info": {"INFO", false, true},
	"spdlog::error": {"error", true, false}, "spdlog::critical": {"critical", true, false}, "spdlog::info": {"info", false, false},
}

// cStreams are the output streams whose "<<" chains are read like a print
// call: standard error, where a C++ program reports what ends it.
var cStreams = map[string]bool{"cerr": true}

// MaxStreamTokens bounds the tokens one "<<" chain is followed for.
const MaxStreamTokens = 4096

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
		if i >= 2 && toks[i-1].text == "::" && toks[i-2].kind == 'n' && i+1 < len(toks) && toks[i+1].text == "(" {
			call := toks[i-2].text + "::" + name
			if lc, ok := cLogCalls[call]; ok {
				tag, skip := "", 0
				if lc.tagged {
					tag, _ = cArgs(toks, i+2, 0)
					skip = 1
				}
				if f, holes := cArgs(toks, i+2, skip); f != "" {
					out = append(out, Raw{File: path, Line: t.line, Func: fn, Call: call, Tag: tag, Format: f, Holes: holes, Lang: "c", Info: !lc.fatal})
				}
				continue
			}
		}
		if cStreams[name] && i+2 < len(toks) && toks[i+1].text == "<" && toks[i+2].text == "<" && (i == 0 || toks[i-1].text != ".") {
			// std::cerr << "Error: " << what << '\n';
			if f, holes := cStream(toks, i+3); strings.TrimSpace(strings.ReplaceAll(f, "%s", "")) != "" {
				out = append(out, Raw{File: path, Line: t.line, Func: fn, Call: "std::" + name, Format: f, Holes: holes, Lang: "c"})
			}
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

// cStream renders a "<<" chain starting at toks[i] (after the stream and its
// first "<<") up to the end of the statement: each operand that is a string
// literal (adjacent ones concatenated) is text, any other operand a hole. A
// character literal ('\n') is dropped: the tokenizer keeps no value for it.
func cStream(toks []cTok, i int) (string, bool) {
	var b strings.Builder
	depth := 0
	holes := false
	operandHole := false // the current operand has a non-literal token
	flush := func() {
		if operandHole {
			b.WriteString("%s")
			holes = true
		}
		operandHole = false
	}
	for n := 0; i < len(toks) && n < MaxStreamTokens && b.Len() < MaxFormatBytes; i, n = i+1, n+1 {
		t := toks[i]
		if t.kind == 'o' {
			switch t.text {
			case "(", "[", "{":
				depth++
				operandHole = true
				if depth > MaxArgDepth {
					flush()
					return b.String(), holes
				}
				continue
			case ")", "]", "}":
				if depth == 0 {
					flush()
					return b.String(), holes
				}
				depth--
				continue
			case ";":
				if depth == 0 {
					flush()
					return b.String(), holes
				}
				continue
			case "<":
				if depth == 0 && i+1 < len(toks) && toks[i+1].text == "<" {
					flush()
					i, n = i+1, n+1
					continue
				}
			case "'":
				continue
			}
			if depth == 0 && t.text != "::" {
				operandHole = true
			}
			continue
		}
		if t.kind == 's' && depth == 0 && !operandHole {
			b.WriteString(t.text)
			if strings.Contains(t.text, "%") {
				holes = true
			}
			continue
		}
		if t.kind == 's' {
			continue
		}
		operandHole = true
	}
	flush()
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
