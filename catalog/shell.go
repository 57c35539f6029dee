package catalog

import (
	"regexp"
	"strconv"
	"strings"
)

// A launcher script (a container's entrypoint.sh) prints its own lines into
// the unit's journal before and around the engine: the checks it refuses to
// start on, the wait for the engine's port, a watchdog. ShellExtract reads
// them from a POSIX shell or bash source, line by line (bash(1): "\"
// continues a line, "name() {" opens a function, `echo`/`printf` print their
// quoted words, `>&2` sends them to standard error).

var (
	shFunc = regexp.MustCompile(`^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{?\s*$`)
	// shPrint: an echo or printf command at the start of a command: the
	// line's start or after a control word or separator.
	shPrint = regexp.MustCompile(`(?:^\s*|[;&|{(]\s*|\b(?:then|else|do)\s+|\)\s+)(echo|printf)\s+((?:-[neE]+\s+)?)`)
	// shStatus: the command that ends the script or the function with a
	// status, and the status.
	shStatus = regexp.MustCompile(`(?:^|[;&|{]\s*|\b(?:then|else)\s+)(exit|return)(?:\s+("?\$?\{?\w+\}?"?))?\s*(?:;|$|\}|\|\||&&)`)
	shVar    = regexp.MustCompile(`\$\{([A-Za-z_]\w*|[0-9@*#?])[^}]{0,80}\}|\$([A-Za-z_]\w*|[0-9@*#?])|\$\(\(([^()]{0,120})\)\)|\$\(([^()]{0,120})\)`)
	shStderr = regexp.MustCompile(`>&\s*2\b|>\s*"?/dev/stderr"?`)
)

// shellWords returns the quoted and bare words of an echo/printf command
// from src (after the command name) up to the first redirect or separator,
// and what follows them.
func shellWords(src string) (words []string, rest string) {
	i := 0
	for i < len(src) && len(words) < 64 {
		for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
		if i >= len(src) {
			break
		}
		switch c := src[i]; c {
		case '"', '\'':
			j := i + 1
			var b strings.Builder
			for j < len(src) && src[j] != c {
				if c == '"' && src[j] == '\\' && j+1 < len(src) {
					j++
				}
				if c == '"' && strings.HasPrefix(src[j:], "$(") {
					// a command substitution keeps its own quotes
					k := j + 2
					for depth := 1; k < len(src) && depth > 0; k++ {
						switch src[k] {
						case '(':
							depth++
						case ')':
							depth--
						}
					}
					b.WriteString(src[j:k])
					j = k
					continue
				}
				b.WriteByte(src[j])
				j++
			}
			if j >= len(src) {
				return words, "" // unterminated: the statement spans lines we do not join
			}
			words = append(words, b.String())
			i = j + 1
		case '>', '<', ';', '|', '&', ')', '}', '#':
			return words, src[i:]
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t;|&><)", rune(src[j])) {
				j++
			}
			if src[i] == '2' && j < len(src) && src[j] == '>' {
				return words, src[i:]
			}
			words = append(words, src[i:j])
			i = j
		}
	}
	return words, src[i:]
}

// quoted reports whether the end of s lies inside a quoted string.
func quoted(s string) bool {
	var q byte
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case q == 0 && (c == '\'' || c == '"'):
			q = c
		case q == '"' && c == '\\':
			i++
		case c == q:
			q = 0
		}
	}
	return q != 0
}

// shellHoles writes a shell word's expansions ($VAR, ${VAR:-x}, $(cmd)) as
// named holes, {VAR}, the form the synthesizer fills.
func shellHoles(s string) string {
	return shVar.ReplaceAllStringFunc(s, func(m string) string {
		sm := shVar.FindStringSubmatch(m)
		name := sm[1] + sm[2]
		if name == "" {
			f := strings.Fields(sm[3] + sm[4])
			if len(f) == 0 {
				return "{x}"
			}
			name = f[0] // $(du -h ...) is a size, $(date ...) a time
		}
		return "{" + name + "}"
	})
}

type shLine struct {
	n    int // 1-based line number of its first physical line
	text string
}

// shellLines joins continued lines and drops comments-only lines.
func shellLines(src []byte) []shLine {
	var out []shLine
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(src), "\n") {
		if cur.Len() == 0 {
			start = i + 1
		}
		t := strings.TrimRight(l, " \t\r")
		if strings.HasSuffix(t, `\`) && !strings.HasSuffix(t, `\\`) {
			cur.WriteString(strings.TrimSuffix(t, `\`) + " ")
			continue
		}
		cur.WriteString(t)
		s := cur.String()
		cur.Reset()
		if ts := strings.TrimSpace(s); ts == "" || strings.HasPrefix(ts, "#") {
			continue
		}
		out = append(out, shLine{start, s})
	}
	return out
}

// shellStatus reads the status an exit or return in t gives: ok is false
// when t has none. A bare exit returns the last command's status (an echo:
// 0); a variable ("$RC") is the status of what failed.
func shellStatus(t string) (fails, ok bool) {
	m := shStatus.FindStringSubmatch(t)
	if m == nil {
		return false, false
	}
	st := strings.Trim(m[2], `"{}$`)
	if st == "" {
		return false, true
	}
	if n, err := strconv.Atoi(st); err == nil {
		return n != 0, true
	}
	return true, true
}

// shellFails reports whether the lines from start on end the script or the
// function with a non-zero status in the block that holds them, before it
// closes: the stderr lines before are then the reason given for it. An exit
// inside a nested block is conditional and does not count.
func shellFails(lines []shLine, start int) bool {
	depth := 0
	for k := start; k < len(lines) && k < start+16; k++ {
		t := strings.TrimSpace(lines[k].text)
		if depth == 0 {
			if fails, ok := shellStatus(t); ok {
				return fails
			}
		}
		switch {
		case t == "fi" || t == "esac" || t == "done" || strings.HasPrefix(t, ";;") || strings.HasPrefix(t, "}"):
			if depth == 0 {
				return false
			}
			depth--
		case strings.HasPrefix(t, "if ") || strings.HasPrefix(t, "case ") || strings.HasSuffix(t, "; do") || strings.HasSuffix(t, "{"):
			depth++
		case strings.HasPrefix(t, "else") || strings.HasPrefix(t, "elif"):
			if depth == 0 {
				return false
			}
		}
	}
	return false
}

// ShellExtract lists the lines a shell script prints. A line sent to
// standard error that the script or its function follows with a non-zero
// `exit` or `return` in the same block is fatal (Call "echo", Exc "exit N"),
// with the indented lines printed with it as its detail; other lines are
// informational (readiness or milestones only).
func ShellExtract(path string, src []byte) []Raw {
	if len(src) > MaxFileBytes {
		return nil
	}
	lines := shellLines(src)
	var out []Raw
	fn := ""
	group := -1 // the fatal statement whose detail lines follow
	for i, l := range lines {
		if m := shFunc.FindStringSubmatch(l.text); m != nil {
			fn, group = m[1], -1
			continue
		}
		if l.text == "}" {
			fn, group = "", -1
			continue
		}
		m := shPrint.FindStringSubmatchIndex(l.text)
		if m != nil && quoted(l.text[:m[2]]) {
			m = nil // inside a quoted program (awk '...{printf ...}')
		}
		if m == nil {
			if t := strings.TrimSpace(l.text); t == "fi" || t == "esac" || strings.HasPrefix(t, ";;") || strings.HasSuffix(t, "}") {
				group = -1 // the block that printed it closed
			} else if _, ok := shellStatus(t); ok {
				group = -1
			}
			continue
		}
		call := l.text[m[2]:m[3]]
		words, rest := shellWords(l.text[m[1]:])
		if len(words) == 0 {
			continue
		}
		if call == "printf" {
			words = words[:1] // the format; its arguments fill it
		}
		msg := capStr(shellHoles(strings.Join(words, " ")))
		if call == "printf" {
			msg = strings.TrimSuffix(msg, `\n`)
		}
		stderr := shStderr.MatchString(rest)
		if group >= 0 && stderr && strings.HasPrefix(msg, " ") {
			out[group].Format = capStr(out[group].Format + "\n" + msg)
			continue
		}
		group = -1
		r := Raw{File: path, Line: l.n, Func: fn, Call: call, Format: msg, Lang: "sh", Info: true}
		r.Holes = strings.Contains(msg, "{")
		fails, ok := shellStatus(rest)
		if !ok {
			fails = shellFails(lines, i+1)
		}
		if stderr && fails {
			r.Info, r.Exc = false, "exit"
			group = len(out)
		}
		out = append(out, r)
	}
	return out
}

// shellValues fill a launcher's holes by the variable's name: sizes, counts
// and seconds as numbers, paths as a model path.
var shellValues = []struct {
	re *regexp.Regexp
	v  string
}{
	{regexp.MustCompile(`(?i)path|file|dir|ckpt|checkpoint|tokenizer|model|side|tower|overlay|log$`), "/models/model.bin"},
	{regexp.MustCompile(`(?i)gib|mib|gb|mem|du$`), "12.5"},
	{regexp.MustCompile(`(?i)download|repo`), "org/model"},
	{regexp.MustCompile(`(?i)ctx|pool|slots|tok|port|pid|rc|limit|silent|_s$|^t$|^[0-9]$|count|len|size|num`), "2"},
}

func fillShell(format string) string {
	return holeRe.ReplaceAllStringFunc(format, func(h string) string {
		if !strings.HasPrefix(h, "{") {
			return h // a printf hole keeps its text: the script prints it so
		}
		name := strings.Trim(h, "{}")
		for _, sv := range shellValues {
			if sv.re.MatchString(name) {
				return sv.v
			}
		}
		return "x"
	})
}
