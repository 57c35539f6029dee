package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/llmfleet/analyzer/domain"
)

// MaxSuggestBytes bounds the part of a message a suggested rule quotes:
// past it the text is usually one request's or one path's detail, and a
// long pattern only matches the line it came from.
const MaxSuggestBytes = 120

// varying are the parts of a message that change from one boot to the
// next, in the order they are tried (the first that matches at a position
// wins): UUIDs, hex ids and addresses, dates and times, paths, sizes with
// their unit, and numbers with their decimal and thousands separators.
var varying = []struct {
	re      *regexp.Regexp
	pattern string
}{
	{regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`), `[0-9a-fA-F-]{36}`},
	{regexp.MustCompile(`^0x[0-9a-fA-F]+\b`), `0x[0-9a-fA-F]+`},
	{regexp.MustCompile(`^[0-9a-f]{12,}\b`), `[0-9a-f]+`},
	{regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?`), `\S+(?: \S+)?`},
	{regexp.MustCompile(`^\d\d:\d\d:\d\d(?:[.,]\d+)?`), `[\d:.,]+`},
	{regexp.MustCompile(`^(?:[A-Za-z]:)?(?:[.~]{0,2}/)?[\w.@+%=,-]+(?:/[\w.@+%=,-]+)+/?|^(?:[.~]{0,2}/[\w.@+%=,-]+)+/?`), `\S+`},
	// A size's unit changes with its magnitude (224.00 MiB, 1.17 GiB).
	{regexp.MustCompile(`^\d+(?:[.,]\d+)*\s?(?:[KMGTP]i?B|bytes|B)\b`), `\d+(?:[.,]\d+)*\s?(?:[KMGTP]i?B|bytes|B)`},
	{regexp.MustCompile(`^\d+(?:[.,]\d+)*`), `\d+(?:[.,]\d+)*`},
}

// GeneralizeMessage turns one message (a log line with its envelope already
// stripped) into an RE2 pattern that matches the same statement in another
// boot (invalid UTF-8 is read as U+FFFD): the parts that vary (numbers, sizes' digits, hex ids, UUIDs, times,
// paths) become classes, everything else is quoted literally, runs of
// spaces match any run, and the text is cut at MaxSuggestBytes on a word
// boundary. The pattern is unanchored, so a longer or differently
// prefixed line still matches. It returns "" when nothing literal is left
// (a message of numbers and paths only names nothing).
func GeneralizeMessage(msg string) string {
	if len(msg) > 4*MaxSuggestBytes { // only the start is quoted; leave a megabyte line unread
		msg = msg[:4*MaxSuggestBytes]
	}
	msg = strings.TrimSpace(strings.ToValidUTF8(msg, "\uFFFD"))
	if len(msg) > MaxSuggestBytes {
		cut := strings.LastIndexAny(msg[:MaxSuggestBytes], " \t:,;")
		if cut < MaxSuggestBytes/2 {
			cut = MaxSuggestBytes
			for cut > 0 && !utf8Start(msg[cut]) {
				cut--
			}
		}
		msg = strings.TrimRight(msg[:cut], " \t:,;")
	}
	var b strings.Builder
	literal := 0
	for i := 0; i < len(msg); {
		// A class only starts at a word boundary: "fp8" and "sm_90" are names.
		if i == 0 || !IsWordByte(msg[i-1]) {
			if p, n := varyingAt(msg[i:]); n > 0 {
				b.WriteString(p)
				i += n
				continue
			}
		}
		if msg[i] == ' ' || msg[i] == '\t' {
			for i < len(msg) && (msg[i] == ' ' || msg[i] == '\t') {
				i++
			}
			b.WriteString(`\s+`)
			continue
		}
		j := i + 1
		for j < len(msg) && msg[j] != ' ' && msg[j] != '\t' && (IsWordByte(msg[j]) == IsWordByte(msg[j-1]) || !IsWordByte(msg[j])) {
			j++
		}
		b.WriteString(regexp.QuoteMeta(msg[i:j]))
		for k := i; k < j; k++ {
			if isLetter(msg[k]) {
				literal++
			}
		}
		i = j
	}
	if literal < 3 {
		return ""
	}
	return b.String()
}

func varyingAt(s string) (string, int) {
	for _, v := range varying {
		if m := v.re.FindStringIndex(s); m != nil && m[1] > 0 {
			return v.pattern, m[1]
		}
	}
	return "", 0
}

// IsWordByte reports whether c is in RE2's \w, [0-9A-Za-z_].
func IsWordByte(c byte) bool { return c == '_' || isLetter(c) || c >= '0' && c <= '9' }
func isLetter(c byte) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func utf8Start(c byte) bool  { return c < 0x80 || c >= 0xC0 }

// Suggestion is a rule proposed from a failure no rule explains: the
// decisive line of each attempt of its group, the engine and phase it
// happened in, and the verdict the operator chose.
type Suggestion struct {
	// ID is the rule id (default: "local.<engine>_<words of the line>").
	ID      string
	Title   string
	Engine  string
	Phase   domain.Phase
	Verdict domain.Verdict
	// Lines are the decisive lines as logged (envelope and all); the
	// first is the one the pattern is made from, all become tests.
	Lines []string
	// Priority orders it among competing causes (default 60: above the
	// generic wrappers, below engine files' specific wordings).
	Priority int
}

// suggestedFile is the rule file a Suggestion renders to (only the fields
// it sets, in the order people read them).
type suggestedFile struct {
	Rules []suggestedRule `yaml:"rules"`
}

type suggestedRule struct {
	ID        string          `yaml:"id"`
	Title     string          `yaml:"title"`
	Engines   []string        `yaml:"engines,omitempty"`
	Match     string          `yaml:"match"`
	When      string          `yaml:"when"`
	Verdict   string          `yaml:"verdict"`
	Phase     string          `yaml:"phase,omitempty"`
	Priority  int             `yaml:"priority"`
	Severity  string          `yaml:"severity"`
	MessageID string          `yaml:"message_id"`
	Note      string          `yaml:"note"`
	Tests     []suggestedTest `yaml:"tests"`
}

type suggestedTest struct {
	Name   string         `yaml:"name"`
	Engine string         `yaml:"engine,omitempty"`
	Phase  string         `yaml:"phase,omitempty"`
	Lines  []string       `yaml:"lines"`
	Expect map[string]any `yaml:"expect"`
}

// Pattern is the suggested rule's match: GeneralizeMessage of the first
// line's message.
func (s Suggestion) Pattern(set *Set) string { return GeneralizeMessage(s.message(set)) }

// message is the first line without its envelope (Envelope, then the
// engine's own strip).
func (s Suggestion) message(set *Set) string {
	if len(s.Lines) == 0 {
		return ""
	}
	msg, _, _ := Envelope(s.Lines[0])
	if e := set.Engine(s.Engine); e != nil {
		msg = e.Strip(msg)
	}
	return msg
}

// Render writes the suggestion as a rule file (YAML) that `rules lint`
// accepts: one rule, its note naming the line, and one test per line
// (at most 5). Errors: an unknown verdict, or a line from which no pattern
// with enough literal text can be made.
func (s Suggestion) Render(set *Set) ([]byte, error) {
	if !slices.Contains(domain.Verdicts, s.Verdict) || !s.Verdict.IsFailure() || s.Verdict == domain.VerdictUnknownFailure {
		return nil, fmt.Errorf("suggest: %q is not a failure verdict of the spec", s.Verdict)
	}
	pat := s.Pattern(set)
	if pat == "" {
		return nil, fmt.Errorf("suggest: the decisive line has no stable words to match on")
	}
	id := s.ID
	if id == "" {
		id = "local." + slug(s.Engine, s.message(set))
	}
	title := s.Title
	if title == "" {
		title = strings.ReplaceAll(string(s.Verdict), "_", " ") + " (suggested from an unknown failure)"
	}
	prio := s.Priority
	if prio == 0 {
		prio = 60
	}
	sum := sha256.Sum256([]byte(id))
	r := suggestedRule{
		ID: id, Title: title, Match: pat, When: "error_line", Verdict: string(s.Verdict),
		Priority: prio, Severity: "error", MessageID: hex.EncodeToString(sum[:16]),
		Note: "{{.Line}} — " + title + ". Written from the failure's own line; say what to change here.",
	}
	if s.Engine != "" && s.Engine != "unknown" {
		r.Engines = []string{s.Engine}
	}
	if s.Phase.Valid() {
		r.Phase = string(s.Phase)
	}
	seen := map[string]bool{}
	for _, l := range s.Lines {
		if seen[l] || len(r.Tests) == 5 {
			continue
		}
		seen[l] = true
		r.Tests = append(r.Tests, suggestedTest{Name: fmt.Sprintf("line of the failure %d", len(r.Tests)+1),
			Engine: s.Engine, Phase: r.Phase, Lines: []string{l}, Expect: map[string]any{}})
	}
	return yaml.Marshal(suggestedFile{Rules: []suggestedRule{r}})
}

var (
	slugWord = regexp.MustCompile(`[A-Za-z]{3,}`)
	pathLike = regexp.MustCompile(`\S*/\S*`)
)

// slug makes a rule id tail from the engine and the message's first words.
func slug(engine, msg string) string {
	words := slugWord.FindAllString(pathLike.ReplaceAllString(msg, " "), 4)
	s := strings.ToLower(strings.Join(words, "_"))
	if engine == "" {
		engine = "unknown"
	}
	return engine + "_" + s
}
