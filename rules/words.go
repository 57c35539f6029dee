package rules

import (
	"strings"
	"unicode/utf8"
)

// The words and levels that make a line an error, in one place: the
// judge (package judge: the last error lines of an unknown failure, the
// rules' `error` variable) and the log viewer's "next error" (package web)
// both read lines through them.

// IsErrorText reports whether a line of engine output reports an error as
// the judge reads it: error words (errorWords) in a line not logged below
// error level (a WARNING that something failed is not one). It is the one
// definition the log viewer's "next error" and the judge share (the judge
// counts exception and death lines too, whatever their words).
func IsErrorText(text string) bool {
	if !looksLikeError(text) {
		return false
	}
	_, _, level := Envelope(text)
	return ErrorLevel(level)
}

// ErrorLevel reports whether a line logged at level (as Envelope names it:
// "error", "critical", "warning", "info", "debug"; "" when the line names
// none) may report an error: error words count unless the level is below
// error.
func ErrorLevel(level string) bool {
	return level == "" || level == "error" || level == "critical"
}

// errorWords make a line look like an error (for unknown failures); plain
// substring tests, since this runs on every line.
var errorWords = []string{"Error", "ERROR", "error", "Exception", "Traceback", "FATAL", "Fatal", "fatal",
	"FAILED", "Failed", "failed", "panic", "Abort", "abort", "Killed", "killed", "out of memory",
	"Invalid", "invalid", "Validation", "has wrong", "unknown tensor"}

// looksLikeError reports whether s contains one of errorWords, in one pass:
// at each byte only the words starting with that byte are compared (17
// strings.Contains scans per line were a tenth of the tracker's time).
func looksLikeError(s string) bool {
	for i := 0; i < len(s); i++ {
		for _, w := range errorWordsByFirst[s[i]] {
			if strings.HasPrefix(s[i:], w) {
				return true
			}
		}
	}
	return false
}

// errorWordsByFirst indexes errorWords by their first byte.
var errorWordsByFirst = func() (m [256][]string) {
	for _, w := range errorWords {
		m[w[0]] = append(m[w[0]], w)
	}
	return m
}()

// mayMatterWords are the words without which the exception reader does
// not need a line (most lines of a healthy boot have none); the prefilter
// finds them in its one pass (Line.MayMatter). " in " is not one: the
// frames that hold it ("x.py:12, in f(") are read inside a traceback,
// which the reader reads whole, and in prose it let one line in twenty of
// the night journal by (judge.TestReaderGateKeepsFatals).
var mayMatterWords = []string{"Error", "Exception", "Traceback", `File "`, "panic", "terminate called",
	"what()", "GGML_", "ERR", "CRITICAL", "FATAL", "PANIC", "Exit", "Interrupt", "Unsupported", "] E ",
	"direct cause", "During handling", "Timeout", "Violation", "Failure", "Fault"}

// mayMatter tells whether s holds one of mayMatterWords or mayMatterShapes.
func mayMatter(s string) bool {
	for _, w := range mayMatterWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return mayMatterShapes(s)
}

// mayMatterShapes reports whether s may hold what the exception reader
// takes but no word shows: a level in brackets as Envelope reads it
// ("[error]", "[E]"), or an exception type that is dotted and has no
// suffix word ("triton.runtime.errors.OutOfResources: ...", which
// exceptionLine takes for its dot and message). Two byte scans: it runs
// on the lines without a word, most of a journal.
func mayMatterShapes(s string) bool {
	if len(s) < 3 {
		return false
	}
	for i := 0; ; {
		k := strings.IndexByte(s[i:], '[')
		if k < 0 {
			break
		}
		i += k + 1
		if j := strings.IndexByte(s[i:min(len(s), i+61)], ']'); j > 0 && errorLevelWord(s[i:i+j]) {
			return true
		}
	}
	for i := 0; ; {
		k := strings.IndexByte(s[i:], ':')
		if k < 0 {
			return false
		}
		end := i + k
		start := end
		for start > 0 && IsWordByte(s[start-1]) {
			start--
		}
		if start < end && start > 0 && s[start-1] == '.' && 'A' <= s[start] && s[start] <= 'Z' {
			return true
		}
		i = end + 1
	}
}

// errorLevelWord reports whether levelWord(s) is "error" or "critical".
// An ASCII word is put in upper case on the stack, not in a new string
// as levelWord's strings.ToUpper does; any other goes to levelWord, whose
// ToUpper also maps some non-ASCII letters to ASCII ones ("crıtıcal").
func errorLevelWord(s string) bool {
	s = strings.TrimSpace(s)
	var buf [len("CRITICAL")]byte
	if len(s) > len(buf) {
		return !isASCII(s) && isErrorLevel(levelWord(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return isErrorLevel(levelWord(s))
		}
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	return isErrorLevel(levelOf(string(buf[:len(s)])))
}

func isErrorLevel(level string) bool { return level == "error" || level == "critical" }

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
