package rules

import (
	"reflect"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
)

// setRegexps returns every lazyRegexp a rule set holds, each once.
func setRegexps(s *Set) []*lazyRegexp {
	var out []*lazyRegexp
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			if v.Type() == reflect.TypeFor[*lazyRegexp]() {
				out = append(out, (*lazyRegexp)(v.UnsafePointer()))
				return
			}
			walk(v.Elem())
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		}
	}
	walk(reflect.ValueOf(s))
	return out
}

// TestSearchDFAsAgree: wherever the search DFA of a pattern of the
// built-in rules decides, it says what regexp.MatchString says, on the
// bundled journals' messages (those up to 512 bytes); and it decides most of the lines that match
// (else MatchString gains nothing from it).
func TestSearchDFAsAgree(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	// The regexp package takes the NFA on long lines (tens of µs each,
	// for ~500 patterns): lines up to 512 bytes keep the test in seconds.
	lines := shortMessages(t, 512)
	res := setRegexps(set)
	if len(res) < 100 {
		t.Fatalf("only %d patterns in the built-in set", len(res))
	}
	withDFA, matched, decidedMatches := 0, 0, 0
	for _, p := range res {
		if p.quota == nil {
			t.Fatalf("%q has no search DFA quota", p.src)
		}
		quota := new(atomic.Int64) // a pattern's own: the set's is its Load's
		quota.Store(maxDFAStates)
		d := searchDFA(p.src, quota)
		if d == nil {
			continue
		}
		withDFA++
		re := regexp.MustCompile(p.src)
		for _, l := range lines {
			ok, decided := d.contains(l)
			if !decided {
				if re.MatchString(l) {
					matched++
				}
				continue
			}
			if want := re.MatchString(l); ok != want {
				t.Fatalf("%q on %q: DFA %v, regexp %v", p.src, l, ok, want)
			}
			if ok {
				matched++
				decidedMatches++
			}
		}
	}
	t.Logf("%d patterns, %d with a search DFA; %d of their %d matches decided by it", len(res), withDFA, decidedMatches, matched)
	if withDFA < len(res)/2 || decidedMatches < matched*3/4 {
		t.Errorf("%d of %d patterns have a search DFA, deciding %d of %d matches", withDFA, len(res), decidedMatches, matched)
	}
}

// FuzzSearchDFA: wherever a search DFA decides, it says what
// regexp.MatchString says.
func FuzzSearchDFA(f *testing.F) {
	f.Add(`Capturing CUDA graphs \((?:mixed prefill-decode, )?(?:PIECEWISE|FULL)\): +\d+%`, "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|█| 67/67")
	f.Add(`^INFO: +Started`, "x INFO: Started")
	f.Add(`a|ab`, "xxab")
	f.Add(`(?i)took [\d.]+ s`, "TOOK 1.5 S")
	f.Add(`x*`, "")
	f.Add(`\bword\b`, "a word")
	f.Add("a\nb", "xa\nb")
	f.Fuzz(func(t *testing.T, expr, text string) {
		re := fuzzPattern(expr)
		if re == nil {
			return
		}
		quota := new(atomic.Int64)
		quota.Store(maxDFAStates)
		ok, decided := searchDFA(expr, quota).contains(text)
		if !decided {
			return
		}
		if want := re.MatchString(text); ok != want {
			t.Fatalf("%q on %q: DFA %v, regexp %v", expr, text, ok, want)
		}
	})
}

// TestSearchQuota: the patterns of a rule set share one quota of search
// DFA states; a DFA that needs a state the quota no longer has fails, and
// MatchString answers through the regexp, the same.
func TestSearchQuota(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	res := setRegexps(set)
	for _, p := range res {
		if p.quota != res[0].quota {
			t.Fatalf("%q and %q draw from different quotas", p.src, res[0].src)
		}
	}
	texts := []string{"Loading weights took 12.5 seconds", "Loading weights took seconds", "x Loading weights took 3 seconds y", ""}
	for _, left := range []int64{0, 3, maxDFAStates} {
		quota := new(atomic.Int64)
		quota.Store(left)
		p := newLazyRegexp(`Loading weights took [\d.]+ seconds`, 0, nil, quota)
		for _, s := range texts {
			if got, want := p.MatchString(s), regexp.MustCompile(p.src).MatchString(s); got != want {
				t.Errorf("quota %d: MatchString(%q) = %v, regexp %v", left, s, got, want)
			}
		}
		switch built := p.search.dfa != nil && !p.search.dfa.failed.Load(); {
		case left == maxDFAStates && !built:
			t.Errorf("quota %d: no search DFA", left)
		case left < 10 && built:
			t.Errorf("quota %d: a search DFA of more states than the quota", left)
		}
		if quota.Load() > left {
			t.Errorf("quota %d grew to %d", left, quota.Load())
		}
	}
}

// TestSearchDFAConcurrent: goroutines asking the same patterns at once
// build their search DFAs together and get the regexp's answers (make test
// runs it under the race detector).
func TestSearchDFAConcurrent(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	lines := shortMessages(t, 256)
	res := setRegexps(set)[:40]
	want := make([][]bool, len(res))
	for i, p := range res {
		re := regexp.MustCompile(p.src)
		for _, l := range lines {
			want[i] = append(want[i], re.MatchString(l))
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range res {
				p := res[(i+g*7)%len(res)]
				for j, l := range lines {
					if got := p.MatchString(l); got != want[(i+g*7)%len(res)][j] {
						t.Errorf("%q on %q: %v, regexp %v", p.src, l, got, !got)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// shortMessages returns bundledMessages of at most max bytes.
func shortMessages(t *testing.T, max int) []string {
	var lines []string
	for _, l := range bundledMessages(t) {
		if len(l) <= max {
			lines = append(lines, l)
		}
	}
	return lines
}

// fuzzPattern is the regexp of a fuzzer's pattern, nil for one too long
// to be a rule's or not a regexp.
func fuzzPattern(expr string) *regexp.Regexp {
	if len(expr) > 400 {
		return nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil
	}
	return re
}
