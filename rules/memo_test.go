package rules

import (
	"regexp"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
)

// TestMemoOnlyDuringLoad: Loads running at once share the memo, get sets
// that judge alike, and leave nothing in it when the last one ends.
func TestMemoOnlyDuringLoad(t *testing.T) {
	var wg sync.WaitGroup
	sets := make([]*Set, 3)
	for i := range sets {
		wg.Go(func() {
			s, err := LoadBuiltin()
			if err != nil {
				t.Error(err)
			}
			sets[i] = s
		})
	}
	wg.Wait()
	if memo.trees != nil || memo.res != nil || memo.alts != nil || memo.loads != 0 {
		t.Fatalf("memo after the loads: %d loads, %d trees, %d regexps, %d splits", memo.loads, len(memo.trees), len(memo.res), len(memo.alts))
	}
	line := "ERROR:    Application startup failed. Exiting."
	for _, s := range sets[1:] {
		if a, b := len(s.all), len(sets[0].all); a != b {
			t.Fatalf("%d rules, then %d", b, a)
		}
		if _, ok := s.FatalLine(s.NewLine(line)); !ok {
			t.Fatalf("a set of the concurrent loads misses %q", line)
		}
	}
	if _, err := parsePattern("a(b"); err == nil {
		t.Fatal("a bad pattern parsed")
	}
}

// TestLazyRegexpAgrees: what a lazyRegexp answers from the parse (captures,
// their names, the error of a bad pattern) is what regexp.Compile says.
func TestLazyRegexpAgrees(t *testing.T) {
	for _, src := range []string{
		`plain`, `(a)(b(c))`, `(?P<rank>\d+) of (?P<world>\d+)`, `(?:x)(?P<n>y)|(z)`, `(?i)(?P<a>A)(?P<a2>B)?`, `a(b`, `x{2,1}`, `(?P<>a)`,
	} {
		want, wantErr := regexp.Compile(src)
		got, err := compilePattern(src)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%q: error %v, regexp.Compile's %v", src, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got.NumSubexp() != want.NumSubexp() || !slices.Equal(got.SubexpNames(), want.SubexpNames()) {
			t.Errorf("%q: %d captures %q, regexp's %d %q", src, got.NumSubexp(), got.SubexpNames(), want.NumSubexp(), want.SubexpNames())
		}
		for _, name := range append(want.SubexpNames(), "", "missing") {
			if got.SubexpIndex(name) != want.SubexpIndex(name) {
				t.Errorf("%q: SubexpIndex(%q) = %d, regexp's %d", src, name, got.SubexpIndex(name), want.SubexpIndex(name))
			}
		}
		if got.re != nil {
			t.Errorf("%q: compiled before its first match", src)
		}
		if got.MatchString("zz") != want.MatchString("zz") || got.compiled().String() != src {
			t.Errorf("%q: compiled to something else", src)
		}
	}
}

// TestLoadCompilesNoPattern: a Load checks every pattern but compiles none;
// a line compiles only the patterns its literals let through.
func TestLoadCompilesNoPattern(t *testing.T) {
	set, err := Load(fstest.MapFS{"a.yaml": {Data: []byte(`
engines:
  - engine: demo
    detect: ["demo-engine v\\d+"]
    phases:
      - {phase: weights, match: "Loading weights from (\\S+)"}
rules:
  - id: demo.oom
    engines: [demo]
    match: 'CUDA out of memory\. Tried to allocate (?P<size>\S+)'
    verdict: oom_weights
  - id: demo.nccl
    engines: [demo]
    match: 'NCCL error: (\w+)'
    verdict: distributed_error
`)}})
	if err != nil {
		t.Fatal(err)
	}
	compiled := func() (n int, all int) {
		for _, m := range matchers(set) {
			all++
			if m.re.re != nil {
				n++
			}
		}
		return n, all
	}
	if n, all := compiled(); n != 0 || all < 4 {
		t.Fatalf("after the load: %d of %d patterns compiled, want 0 of at least 4", n, all)
	}
	line := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
	hits := set.MatchLine(&LineEnv{Engine: "demo", Line: line}, SeqState{})
	if len(hits) != 1 || hits[0].Rule.ID != "demo.oom" {
		t.Fatalf("hits %+v, want demo.oom", hits)
	}
	if n, _ := compiled(); n != 1 {
		t.Fatalf("after one out-of-memory line: %d patterns compiled, want 1", n)
	}
}

// BenchmarkLoadBuiltin is the rules' share of every command's start.
func BenchmarkLoadBuiltin(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadBuiltin(); err != nil {
			b.Fatal(err)
		}
	}
}
