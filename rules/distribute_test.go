package rules

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// TestGatedAltsAgree: a pattern split by distribute finds what the whole
// regex finds, captures included, and its phase markers match where the
// whole one does, on long lines where the gates' windows decide (a tail
// that must follow far from the gate, a tail literal rarer than the
// gate's, a gate whose literal is there but whose match is not) and on
// the built-in out-of-memory rules.
func TestGatedAltsAgree(t *testing.T) {
	custom, err := Load(fstest.MapFS{"a.yaml": {Data: []byte(`
engines:
  - engine: demo
    detect: ["demo-engine v\\d+"]
    phases:
      - {phase: weights, match: '(?:foo|bar) .*?baz\d'}
      - {phase: ready, match: '(?:ready|up) at (?:\S+)$'}
rules:
  - id: demo.far_tail
    engines: [demo]
    match: '(?:foo|bar) .*?baz(?P<x>\d)'
    verdict: oom_weights
  - id: demo.tail_literal
    engines: [demo]
    match: '(?:abx|cdx) .*?averylongliteral(?P<x>\d)'
    verdict: oom_weights
  - id: demo.overlap
    engines: [demo]
    match: '(?:abc|ab)(?P<r>c?)d(?:.*?(?P<n>\d+) left)?'
    verdict: oom_weights
`)}})
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("lorem ipsum ", 30)
	oom := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB is free."
	lines := []string{
		"foo " + pad + "baz1", "cdx " + pad + "averylongliteral5", "foo" + pad + "baz1", "bar " + pad + "baz", pad + "bar x baz7 foo y baz8",
		"abcd " + pad + "9 left", pad + "abd abcd 12 left", "abc" + pad + "d", pad + "ready at :8000", pad + "up at\n:80",
		pad + oom, oom + pad, pad + "CUDA error: out of memory" + pad, pad + "HIP out of memory " + pad + " of which 2 GiB is free",
		pad + "CUDA" + pad + "out of memory", pad + "RESOURCE_EXHAUSTED", "cuda runtime error (2) : out of memory" + pad,
	}
	gated, rejected, phases := 0, 0, 0
	var l Line
	for _, set := range []*Set{custom, builtin} {
		for _, text := range lines {
			set.Prepare(&l, text)
			for _, r := range set.all {
				if r.alts == nil || r.alts[0].gate == nil {
					continue
				}
				gated++
				if got, want := r.find(&l, text), r.match.FindStringSubmatchIndex(text); !reflect.DeepEqual(got, want) {
					t.Errorf("%s on %q: %v, the whole regex %v", r.ID, text, got, want)
				}
				for i := range r.alts {
					if a := &r.alts[i]; l.may(a.id) && l.near(a.id, a.gate) == nearNo {
						rejected++
					}
				}
			}
			for _, e := range set.engines {
				for _, m := range e.phases {
					if m.alts == nil || m.alts[0].gate == nil {
						continue
					}
					phases++
					if matchAlts(&l, m.alts) != m.re.MatchString(text) {
						t.Errorf("%s phase %s on %q: %v, the whole regex %v", e.Name, m.phase, text, !m.re.MatchString(text), m.re.MatchString(text))
					}
				}
			}
		}
	}
	if gated < 100 || rejected == 0 || phases == 0 {
		t.Errorf("%d gated rule checks, %d alternatives ruled out by their gate's windows, %d gated phase checks: the test does not exercise the gates", gated, rejected, phases)
	}
}
