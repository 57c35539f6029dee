package rules

import (
	"regexp"
	"strings"
)

// Envelope strips the generic per-line envelope engines and pasters add in
// front of a message: process prefixes ("(EngineCore_DP0 pid=12) ",
// "[rank0]: ", Ray's "(ServeReplica:app:LLM pid=3, ip=10.0.0.1) "),
// timestamps, log levels and source locations ("INFO 10-31 15:07:50
// [core.py:708] ", "[2025-08-13 14:29:40 TP0] ", "2024-05-01T10:00:00Z ERROR
// "), and TensorRT-LLM's bracket tags. key is the process the line came
// from, as far as the prefixes tell; level is the log level ("" unknown).
func Envelope(line string) (rest, key, level string) {
	s := line
	for guard := 0; guard < 12; guard++ {
		t := strings.TrimLeft(s, " \t")
		if t == "" {
			break
		}
		// The DFAs find the prefixes; their first submatches are read from
		// the match (procName, bracketInner, levelName), where the regexp
		// package took ~2 % of a night journal's explain to find them.
		if m := procPrefix.FindString(t); m != "" {
			key += procName(m) + ";"
			s = t[len(m):]
			continue
		}
		if m := bracketPrefix.FindString(t); m != "" {
			inner := bracketInner(m)
			if lv := levelWord(inner); lv != "" {
				level = lv
			}
			if tp := findRank(inner); tp != "" {
				key += tp + ";"
			}
			s = t[len(m):]
			continue
		}
		if m := stampPrefix.FindString(t); m != "" {
			s = t[len(m):]
			continue
		}
		if m := levelPrefix.FindString(t); m != "" {
			level = levelWord(levelName(m))
			s = t[len(m):]
			continue
		}
		if m := loggerPrefix.FindStringSubmatch(t); m != nil {
			level = levelWord(m[1])
			s = t[len(m[0]):]
			continue
		}
		if m := sourcePrefix.FindString(t); m != "" {
			s = t[len(m):]
			continue
		}
		break
	}
	// Keep the message's own indentation (frames and source lines are
	// indented under the envelope); drop one separating blank.
	if strings.HasPrefix(s, " ") && !strings.HasPrefix(s, "  ") {
		s = s[1:]
	}
	return s, key, level
}

var (
	// One ^ in front of the alternation: the regexp package then tries
	// position 0 only (a ^ per alternative made it scan the whole line).
	procPrefix    = MustPrefixRegexp(`^(?:\(((?:[A-Za-z][\w:.-]*(?: rank=\d+)? )?pid=\d+|[A-Z][\w:.-]*)(?:, ip=[0-9a-fA-F.:]+)?\)\s?|\[(rank\d+)\]:\s?|(\[rank\d+\]:))`)
	bracketPrefix = MustPrefixRegexp(`^\[([^\]]{1,60})\]:?\s?`)
	tpRank        = regexp.MustCompile(`\b(?:TP|DP|PP|EP|RANK |rank)\s?\d+\b`)
	stampPrefix   = MustPrefixRegexp(`^(?:\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?|\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?|\d\d:\d\d:\d\d(?:\.\d+)?|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.]+:\d+\])\s`)
	levelPrefix   = MustPrefixRegexp(`^(DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|FATAL|PANIC)(?::\s*|\s+)`)
	// Python logging's common formats after the time: "%(asctime)s -
	// %(name)s - %(levelname)s - %(message)s" (the logging cookbook's, used
	// by wrappers such as GPUStack and by scripts around the engines) and
	// "%(asctime)s - %(levelname)s - %(message)s".
	loggerPrefix = MustPrefixRegexp(`^-\s(?:[A-Za-z_][\w.:-]{0,100}\s-\s)?(DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\s-\s`)
	sourcePrefix = MustPrefixRegexp(`^(?:\[?[\w./-]+\.(?:py|cc|cpp|cu|go|rs|h):\d+(?:\[\])?\]:?|[a-z_]+(?:::[a-z_]+)+: |(?:text_generation_launcher|shard-manager|text_generation_router\S*): )\s?`)
)

// procName is submatch 1 of procPrefix's match m: the process inside the
// parentheses, which ends at the first ',' or ')' (neither is in its
// grammar); "" for the "[rank0]:" forms.
func procName(m string) string {
	if m[0] != '(' {
		return ""
	}
	return m[1:strings.IndexAny(m, ",)")]
}

// bracketInner is submatch 1 of bracketPrefix's match m: up to the first
// ']'.
func bracketInner(m string) string { return m[1:strings.IndexByte(m, ']')] }

// levelName is submatch 1 of levelPrefix's match m: its words are capital
// letters, and a ':' or a blank follows them.
func levelName(m string) string {
	i := 0
	for i < len(m) && 'A' <= m[i] && m[i] <= 'Z' {
		i++
	}
	return m[:i]
}

// findRank is tpRank.FindString(s). Every match holds "P" (TP, DP, PP, EP)
// or "RANK " or "rank", and most brackets ("[core.py:708]") hold none, so
// the regexp runs only when one is there (it was 3 % of a night-journal
// explain, on a bracket of nearly every line).
func findRank(s string) string {
	if !strings.Contains(s, "P") && !strings.Contains(s, "RANK ") && !strings.Contains(s, "rank") {
		return ""
	}
	return tpRank.FindString(s)
}

// levelWord normalizes a log level or returns "".
func levelWord(s string) string {
	return levelOf(strings.ToUpper(strings.TrimSpace(s)))
}

// levelOf is levelWord of a word already trimmed and in upper case.
func levelOf(upper string) string {
	switch upper {
	case "E", "ERROR", "ERR":
		return "error"
	case "CRITICAL", "FATAL", "PANIC", "F":
		return "critical"
	case "W", "WARN", "WARNING":
		return "warning"
	case "I", "INFO", "NOTICE":
		return "info"
	case "D", "DEBUG":
		return "debug"
	}
	return ""
}
