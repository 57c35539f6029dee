package judge

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/rules"
)

// TestTracebackRegexpsAgree runs the traceback reader's anchored patterns
// on every message of the bundled journals, and on each message with its
// first envelope parts cut off, through the DFA and through the regexp
// (the envelope's patterns: rules.TestPrefixRegexpsAgree).
func TestTracebackRegexpsAgree(t *testing.T) {
	res := map[string]rules.PrefixRegexp{"frameLine": frameLine, "ipythonFrame": ipythonFrame, "raiseSource": raiseSource}
	for name, p := range res {
		if !p.HasDFA() {
			t.Errorf("%s: no DFA", name)
		}
	}
	msgs := bundledMessages(t)
	for name, p := range res {
		matched := 0
		for _, m := range msgs {
			if got, want := p.FindString(m), p.Regexp.FindString(m); got != want {
				t.Errorf("%s.FindString(%q) = %q, regexp %q", name, m, got, want)
			}
			if got, want := p.FindStringSubmatch(m), p.Regexp.FindStringSubmatch(m); !slices.Equal(got, want) {
				t.Errorf("%s.FindStringSubmatch(%q) = %q, regexp %q", name, m, got, want)
			}
			if p.MatchString(m) {
				matched++
			}
		}
		if matched == 0 && name == "frameLine" {
			t.Errorf("%s matched none of %d messages: the test does not exercise it", name, len(msgs))
		}
	}
	// The bundled journals hold no IPython frame and no raise line: each
	// pattern on a line of its grammar, and on one that only looks like it.
	for name, c := range map[string]struct{ match, not string }{
		"frameLine":    {`  File "/usr/lib/python3/site-packages/vllm/worker.py", line 12, in load_model`, `File "x.py" was not found`},
		"ipythonFrame": {`/opt/app/model.py in load(path)`, `/opt/app/model.py is loaded`},
		"raiseSource":  {`    raise ValueError(`, `    raised ValueError(`},
	} {
		p := res[name]
		if !p.MatchString(c.match) || !p.Regexp.MatchString(c.match) {
			t.Errorf("%s does not match %q", name, c.match)
		}
		if p.MatchString(c.not) || p.Regexp.MatchString(c.not) {
			t.Errorf("%s matches %q", name, c.not)
		}
	}
}

// bundledMessages returns the string MESSAGEs of the bundled journals, each
// also with its leading words cut off one by one.
func bundledMessages(t *testing.T) []string {
	var msgs []string
	for _, path := range []string{"../examples/dankserver-night-ladder.journal.json", "../examples/dankclaw-day.journal.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			var rec struct{ MESSAGE any }
			if json.Unmarshal([]byte(l), &rec) != nil {
				continue
			}
			if s, ok := rec.MESSAGE.(string); ok {
				for ; s != ""; s = strings.TrimLeft(s[1:], " ") {
					msgs = append(msgs, s)
					if i := strings.IndexAny(s, " ]"); i >= 0 {
						s = s[i:]
					} else {
						break
					}
				}
			}
		}
	}
	if len(msgs) < 1000 {
		t.Fatalf("only %d messages", len(msgs))
	}
	return msgs
}
