package rules

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/llmfleet/analyzer/internal/fuzzcost"
	"github.com/llmfleet/analyzer/internal/race"
)

func TestParsePyDictTruncated(t *testing.T) {
	m := parsePyDict(`{'model': '/models', 'served_model_name': ['frank-primary'], 'max_model_len': 262144, 'gpu_memory_utilization': 0.98, 'kv_cache_memory_by`, nil)
	if m["max_model_len"] != int64(262144) || m["gpu_memory_utilization"] != 0.98 {
		t.Fatalf("parsed %v", m)
	}
	if _, ok := m["kv_cache_memory_by"]; ok {
		t.Fatal("kept a truncated key")
	}
	if got := normalizeValue("served_model_name", m["served_model_name"]); got != "frank-primary" {
		t.Fatalf("served_model_name = %v", got)
	}
}

// TestParsePyHostile feeds the reprs that once looped forever or grew the
// stack without bound; each must end at once with what came before the
// damage.
func TestParsePyHostile(t *testing.T) {
	deep := strings.Repeat("[", 1<<20)
	for name, in := range map[string]string{
		"stray paren in list":   `{'a':[)]}`,
		"stray brace in list":   `{'a':[}], 'b': 1}`,
		"stray bracket in call": `{'a':(]), 'b': 1}`,
		"closer as dict key":    `{)}`,
		"1 MiB of [":            "{'a': " + deep,
		"1 MiB of {":            strings.Repeat("{", 1<<20),
		"1 MiB of ( as args":    "a=" + strings.Repeat("(", 1<<20),
	} {
		t.Run(name, func(t *testing.T) {
			// CPU time: wall time stretches with whatever else the machine runs.
			c := fuzzcost.Measure(func() {
				parsePyDict(in, nil)
				parsePyArgs(in, nil)
			})
			if c.Time > race.Budget(time.Second) {
				t.Fatalf("took %v of CPU", c.Time)
			}
		})
	}
	if m := parsePyDict(`{'max_model_len': 4096, 'a':[)], 'b': 2}`, nil); m["max_model_len"] != int64(4096) {
		t.Fatalf("lost the entries before the damage: %v", m)
	}
	// Nesting up to the limit still parses.
	ok := "{'a': " + strings.Repeat("[", maxPyDepth-1) + strings.Repeat("]", maxPyDepth-1) + ", 'n': 7}"
	if m := parsePyDict(ok, nil); m["n"] != int64(7) {
		t.Fatalf("nesting %d deep: %v", maxPyDepth-1, m)
	}
	tooDeep := "{'n': 7, 'a': " + strings.Repeat("[", maxPyDepth+1) + strings.Repeat("]", maxPyDepth+1) + "}"
	if m := parsePyDict(tooDeep, nil); m["n"] != int64(7) {
		t.Fatalf("nesting past the limit: %v", m)
	}
}

// reprLines returns the shape lines of the bundled example journals (vLLM's
// "non-default args: {...}", SGLang's "ServerArgs(...)"): the fuzz seeds.
func reprLines(tb testing.TB) []string {
	tb.Helper()
	paths, _ := filepath.Glob("../examples/*.journal.json")
	var out []string
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			for _, marker := range []string{"non-default args: ", "ServerArgs("} {
				if i := strings.Index(line, marker); i >= 0 {
					rest := line[i+len(marker):]
					if j := strings.Index(rest, `"`); j >= 0 {
						rest = rest[:j] // the end of the JSON MESSAGE string
					}
					out = append(out, strings.ReplaceAll(rest, `\"`, `"`))
				}
			}
		}
		f.Close()
	}
	return out
}

// FuzzParsePy checks that the Python-repr parsers end on any input with a
// result no larger than the input: every element costs at least one byte.
func FuzzParsePy(f *testing.F) {
	for _, s := range reprLines(f) {
		f.Add(s)
	}
	f.Add(`{'a':[)]}`)
	f.Add(`model_path='/m', context_length=None, speculative_algorithm=<Algo.EAGLE: 1>`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range []map[string]any{parsePyDict(s, nil), parsePyArgs(s, nil)} {
			if n := pySize(m, 0); n > len(s)+1 {
				t.Fatalf("%d values from %d bytes", n, len(s))
			}
			for k, v := range m {
				normalizeValue(k, v)
			}
		}
		checkPyWant(t, s)
	})
}

// checkPyWant fails t where parsing s for some keys (the values of the
// others skipped) is not parsing all of it and keeping those keys: for
// each parser, want sets of none, one and every other key of the full
// parse, and a key s lacks.
func checkPyWant(t *testing.T, s string) {
	t.Helper()
	for name, parse := range map[string]func(string, map[string]string) map[string]any{"dict": parsePyDict, "args": parsePyArgs} {
		all := parse(s, nil)
		keys := slices.Sorted(maps.Keys(all))
		for _, pick := range [][]string{nil, keys[:min(1, len(keys))], everyOther(keys), {"no such key"}} {
			want := map[string]string{}
			for _, k := range pick {
				want[k] = k
			}
			exp := map[string]any{}
			for k := range want {
				if v, ok := all[k]; ok {
					exp[k] = v
				}
			}
			got := parse(s, want)
			if got == nil && len(exp) == 0 {
				continue // parsePyDict of a text that is no dict
			}
			if !reflect.DeepEqual(got, exp) {
				t.Fatalf("%s of %q for %q: %#v, all of it %#v", name, s, pick, got, exp)
			}
		}
	}
}

func everyOther(keys []string) []string {
	var out []string
	for i := 0; i < len(keys); i += 2 {
		out = append(out, keys[i])
	}
	return out
}

// TestParsePyWant: the shape lines of the bundled journals and the hostile
// reprs parse the same for the keys a shape rule asks for with the other
// values skipped.
func TestParsePyWant(t *testing.T) {
	lines := append(reprLines(t), `{'a':[)]}`, `{'a': 'x\\', 'b': "q\"", 'c': [1, {'d': (2,)}], 'e': None}`,
		`a='x\\', b=[1, 2], c=Foo(d=1), e=<E.x: 1>`, `{'a': 'unterminated`, `{'a': [1, 2`, `{1: 2, 'b': 3}`)
	if len(lines) < 10 {
		t.Fatalf("%d repr lines: the test does not exercise the parsers", len(lines))
	}
	for _, s := range lines {
		checkPyWant(t, s)
	}
	// The values skipped are not built: for one number of a config dict
	// the allocations left are the map and the top-level keys.
	cfg := `{'model': '/models', 'served_model_name': ['a', 'b'], 'max_model_len': 4096, 'compilation_config': ` +
		`{'level': 3, 'cudagraph_capture_sizes': [1, 2, 4, 8, 16, 32], 'pass_config': {'enable_fusion': True}}, 'seed': 0}`
	all := testing.AllocsPerRun(20, func() { parsePyDict(cfg, nil) })
	one := testing.AllocsPerRun(20, func() { parsePyDict(cfg, map[string]string{"max_model_len": "max_model_len"}) })
	if one*2 > all {
		t.Errorf("parsing one key of the config took %v allocations, all of it %v", one, all)
	}
}

// pySize counts the values in a parsed repr.
func pySize(v any, depth int) int {
	if depth > maxPyDepth+1 {
		panic("nesting past maxPyDepth")
	}
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			n += pySize(e, depth+1)
		}
	case []any:
		for _, e := range x {
			n += pySize(e, depth+1)
		}
	}
	return n
}

// TestHostileRuleFiles: a rule whose pattern would slow every line (a
// million alternatives) is refused at load, naming file and line; a note
// template that would write megabytes is cut at the cap.
func TestHostileRuleFiles(t *testing.T) {
	alts := make([]string, 0, 200000)
	for i := 0; i < 200000; i++ {
		alts = append(alts, "w"+strconv.Itoa(i))
	}
	huge := "rules:\n  - id: site.huge\n    match: '(?:" + strings.Join(alts, "|") + ")'\n    verdict: config_error\n"
	var err error
	c := fuzzcost.Measure(func() { _, err = Load(fstest.MapFS{"site.yaml": &fstest.MapFile{Data: []byte(huge)}}) })
	if err == nil || !strings.Contains(err.Error(), "site.yaml:2") || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("err = %v", err)
	}
	if c.Time > race.Budget(2*time.Second) {
		t.Errorf("refusing took %v of CPU", c.Time)
	}
	loud := "rules:\n  - id: site.loud\n    match: 'boom (?P<x>.*)'\n    verdict: config_error\n" +
		"    note: '{{range $i := 1000}}{{$.Captures.x}}{{end}}'\n"
	set, err := Load(fstest.MapFS{"site.yaml": &fstest.MapFile{Data: []byte(loud)}})
	if err != nil {
		t.Fatal(err)
	}
	r := set.Rules()[0]
	note := r.RenderNote(NoteData{Captures: map[string]string{"x": strings.Repeat("y", 2000)}})
	if len(note) > maxNoteBytes+8 || !strings.HasSuffix(note, "…") {
		t.Errorf("note of %d bytes", len(note))
	}
}

// TestParseNumber: numbers in the forms strconv reads; words, infinities
// and NaN are no numbers.
func TestParseNumber(t *testing.T) {
	for _, c := range []struct {
		tok  string
		want any
	}{
		{"8192", int64(8192)}, {"-3", int64(-3)}, {"+7", int64(7)}, {"1,024", int64(1024)},
		{"0.9", 0.9}, {".5", 0.5}, {"-1.5e3", -1500.0}, {"0x1p-2", 0.25},
		{"auto", nil}, {"None", nil}, {"inf", nil}, {"-Infinity", nil}, {"nan", nil},
		{"", nil}, {",", nil}, {"-", nil}, {"--5", nil}, {"1e999", nil}, {"12GiB", nil},
	} {
		got, ok := parseNumber(c.tok)
		if got != c.want || ok != (c.want != nil) {
			t.Errorf("parseNumber(%q) = %v (%T), %v; want %v (%T)", c.tok, got, got, ok, c.want, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { parseNumber("auto") }); n != 0 {
		t.Errorf("parseNumber of a word: %v allocations, want 0", n)
	}
}
