package rules

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/coregx/ahocorasick"
)

// naiveFind is every occurrence of every literal, by brute force: what
// acAutomaton.findAll must return (in any order).
func naiveFind(lits []string, text string) []acMatch {
	var out []acMatch
	for id, l := range lits {
		if l == "" {
			continue
		}
		for i := 0; i+len(l) <= len(text); i++ {
			if text[i:i+len(l)] == l {
				out = append(out, acMatch{Lit: id, Start: i, End: i + len(l)})
			}
		}
	}
	return out
}

func sortMatches(ms []acMatch) []acMatch {
	slices.SortFunc(ms, func(a, b acMatch) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		if a.End != b.End {
			return a.End - b.End
		}
		return a.Lit - b.Lit
	})
	return ms
}

// checkAC compares the automaton with brute force at DFA depths that cut
// the literals and at one that holds them whole, and checks the order the
// matchers rely on (by end, then by start).
func checkAC(t *testing.T, lits []string, text string) {
	t.Helper()
	want := sortMatches(naiveFind(lits, text))
	two := math.MaxInt // split4: never four walks
	for _, c := range []struct{ depth, split, split4 int }{{1, acSplit, acSplit4}, {2, acSplit, acSplit4}, {3, acSplit, acSplit4},
		{acDepth, acSplit, acSplit4}, {1 << 30, acSplit, acSplit4},
		{1, 0, two}, {3, 0, two}, {acDepth, 0, two}, {1 << 30, 0, two},
		{1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {acDepth, 0, 0}} {
		depth := c.depth
		a := newAC(lits, depth)
		if c.split == 0 {
			// The tables as builtin_ac.go holds them, read back.
			var err error
			if a, _, err = decodeAC(encodeAC(a, [32]byte{}), lits); err != nil {
				t.Fatalf("depth %d: %v", depth, err)
			}
		}
		// 0: every text long enough is read as two walks, or four
		a.split, a.split4 = c.split, c.split4
		found := a.findAll([]acMatch{{Lit: -1, Start: 99, End: 99}}, text)
		if found[0].Lit != -1 {
			t.Fatalf("depth %d split %d/%d: the matches already in dst were moved", depth, c.split, c.split4)
		}
		found = found[1:]
		for i := 1; i < len(found); i++ {
			if p, m := found[i-1], found[i]; p.End > m.End || p.End == m.End && p.Start > m.Start {
				t.Fatalf("depth %d split %d/%d, lits %q text %q: %v comes before %v", depth, c.split, c.split4, lits, text, p, m)
			}
		}
		if got := sortMatches(found); !slices.Equal(got, want) {
			t.Fatalf("depth %d split %d/%d, lits %q text %q:\n got  %v\n want %v", depth, c.split, c.split4, lits, text, got, want)
		}
	}
}

// TestACFindsExactlyTheCaseSensitiveOccurrences: the folded automaton
// reports exactly the case-sensitive, overlapping occurrences, for
// literals that fold together, nest, repeat and hold non-ASCII bytes.
func TestACFindsExactlyTheCaseSensitiveOccurrences(t *testing.T) {
	for _, c := range []struct {
		name string
		lits []string
		text string
	}{
		{"case spellings", []string{"Error", "error", "ERROR", "rror"}, "an Error, an error, an ERROR, an eRRor"},
		{"nested and overlapping", []string{"he", "she", "his", "hers", "s"}, "ushers and shishers"},
		{"repeats", []string{"aa", "aaa", "a"}, "aaaaa"},
		{"non-ASCII", []string{"é", "Café", "CAFÉ"}, "café Café CAFÉ"},
		{"empty literal and text", []string{"", "x"}, ""},
		{"no literal occurs", []string{"CUDA out of memory"}, "all fine here"},
		{"more hits past the middle than are kept aside", []string{"a", "Aa", "aA"}, strings.Repeat("aA", 50)},
		{"a literal across the middle", []string{"middle", "MID"}, strings.Repeat("x", 61) + "middle" + strings.Repeat("y", 61)},
		{"the serving line", []string{"APIServer", "INFO", ` HTTP/1.1" 200`, "POST /v1/"},
			`(APIServer pid=1) INFO:     10.0.0.1:5000 - "POST /v1/chat/completions HTTP/1.1" 200 OK`},
	} {
		t.Run(c.name, func(t *testing.T) { checkAC(t, c.lits, c.text) })
	}
}

// TestACRandom compares with brute force on random literals and texts over
// a small alphabet (so occurrences overlap often) with both cases.
func TestACRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alpha := "abAB.\xc3\xa9"
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alpha[r.IntN(len(alpha))])
		}
		return b.String()
	}
	for range 2000 {
		lits := make([]string, 1+r.IntN(8))
		for i := range lits {
			lits[i] = word(r.IntN(5))
		}
		checkAC(t, lits, word(r.IntN(40)))
	}
}

// TestACLongLiterals: literals of up to 24 bytes (hits compares the first
// 16 as two words, then the rest), in texts made of them with one byte
// changed now and then (its case or another letter) and cut anywhere, so
// literals also occur within 16 bytes of the end.
func TestACLongLiterals(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alpha := "abAB"
	word := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return b
	}
	for range 1000 {
		lits := make([]string, 1+r.IntN(6))
		for i := range lits {
			lits[i] = string(word(1 + r.IntN(24)))
		}
		var text []byte
		for len(text) < 80 {
			l := []byte(lits[r.IntN(len(lits))])
			if r.IntN(2) == 0 {
				l[r.IntN(len(l))] ^= [2]byte{0x20, 0x03}[r.IntN(2)] // its case, or a <-> b
			}
			text = append(text, l...)
			text = append(text, word(r.IntN(3))...)
		}
		checkAC(t, lits, string(text[:r.IntN(len(text)+1)]))
	}
}

// TestBuiltinLiteralsFound: over the built-in rules' literals, each line
// of the example journals gets the same hits from the automaton as from
// brute force.
func TestBuiltinLiteralsFound(t *testing.T) {
	s, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		"(EngineCore_DP0 pid=215) ERROR 10-01 21:41:07 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
		"Traceback (most recent call last):",
		`INFO:     127.0.0.1:40000 - "GET /health HTTP/1.1" 200 OK`,
		"frank-primary.service: Main process exited, code=exited, status=1/FAILURE",
		"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
	}
	for _, l := range lines {
		checkAC(t, s.pre.ac.lits, l)
	}
	if n := len(s.pre.ac.trans) >> s.pre.ac.shift; n < 1000 || 1<<s.pre.ac.shift > 64 {
		t.Errorf("built-in automaton: %d states, stride %d; want a folded alphabet within 64", n, 1<<s.pre.ac.shift)
	}
}

// FuzzAC: the automaton and brute force agree on any literals and text.
func FuzzAC(f *testing.F) {
	f.Add("Error\x00error\x00rror", "an Error, an error")
	f.Add("he\x00she\x00hers", "ushers")
	f.Fuzz(func(t *testing.T, lits, text string) {
		if len(lits) > 256 || len(text) > 4096 {
			return
		}
		checkAC(t, strings.Split(lits, "\x00"), text)
	})
}

// exampleMessages are the string MESSAGEs of the bundled example journal.
func exampleMessages(b *testing.B) []string {
	data, err := os.ReadFile("../examples/dankserver-night-ladder.journal.json")
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec struct{ MESSAGE any }
		if json.Unmarshal(line, &rec) == nil {
			if s, ok := rec.MESSAGE.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// BenchmarkPrefilterAutomaton is why the prefilter has its own automaton:
// the same literals and lines through acAutomaton (with four interleaved
// walks on long lines, two, or one) and through github.com/coregx/ahocorasick's
// FindAllOverlapping (which returns a new slice per line).
func BenchmarkPrefilterAutomaton(b *testing.B) {
	s, err := LoadBuiltin()
	if err != nil {
		b.Fatal(err)
	}
	msgs := exampleMessages(b)
	oneWalk := *s.pre.ac
	oneWalk.split, oneWalk.split4 = math.MaxInt, math.MaxInt // every text read as one walk: what acSplit gains
	twoWalks := *s.pre.ac
	twoWalks.split4 = math.MaxInt // never four: what acSplit4 gains
	for name, ac := range map[string]*acAutomaton{"own": s.pre.ac, "own-one-walk": &oneWalk, "own-two-walks": &twoWalks} {
		b.Run(name, func(b *testing.B) {
			var dst []acMatch
			b.ReportAllocs()
			for b.Loop() {
				for _, m := range msgs {
					dst = ac.findAll(dst[:0], m)
				}
			}
		})
	}
	b.Run("coregx", func(b *testing.B) {
		ac, err := ahocorasick.NewBuilder().AddStrings(s.pre.ac.lits).Build()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, m := range msgs {
				ac.FindAllOverlapping([]byte(m))
			}
		}
	})
}

// TestTrieStates: the table is sized to the trie exactly (the set keeps it
// for its life): the root and one state per distinct prefix.
func TestTrieStates(t *testing.T) {
	if n := trieStates([]string{"abc", "ab", "b", "abd", "ab"}); n != 6 {
		t.Fatalf("states = %d, want 6 (root, a, ab, abc, abd, b)", n)
	}
	a := newAC([]string{"Error", "error", "err", "OOM", "oom", "killed"}, 1<<30)
	if cap(a.trans) != len(a.trans) {
		t.Fatalf("table holds %d entries, room for %d", len(a.trans), cap(a.trans))
	}
}

// TestACStatesWithinTable: literals whose prefixes need more states than
// a transition can name are held to fewer bytes each, and every
// occurrence is still found.
func TestACStatesWithinTable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lits := make([]string, 6000) // 6,000 random 8-letter words: ~40,000 prefixes at depth 8
	for i := range lits {
		b := make([]byte, 8)
		for j := range b {
			b[j] = 'a' + byte(r.IntN(26))
		}
		lits[i] = string(b)
	}
	a := newAC(lits, acDepth)
	if states := len(a.outAt) - 1; states > acMaxStates || a.depth >= acDepth {
		t.Fatalf("%d states at depth %d; want at most %d states, fewer than %d bytes", states, a.depth, acMaxStates, acDepth)
	}
	text := "xx" + lits[17] + "y" + strings.ToUpper(lits[4000]) + lits[5999][:5]
	if got, want := sortMatches(a.findAll(nil, text)), sortMatches(naiveFind(lits, text)); !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestBuiltinACEmbedded: the built-in rules take builtin_ac.go's tables in
// place, they are the tables newAC builds, every transition stays in the
// table, and a set with other literals builds its own.
func TestBuiltinACEmbedded(t *testing.T) {
	s, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	a := s.pre.ac
	inTable := func(a *acAutomaton) bool {
		p, lo := uintptr(unsafe.Pointer(&a.trans[0])), uintptr(unsafe.Pointer(&builtinACWords[0]))
		return p >= lo && p < lo+4*uintptr(len(builtinACWords))
	}
	if !inTable(a) {
		t.Fatal("LoadBuiltin built its automaton instead of reading builtin_ac.go")
	}
	want := newAC(a.lits, acDepth)
	tables := func(a *acAutomaton) []any {
		return []any{a.trans, a.class, a.shift, a.outAt, a.outs, a.foldN, a.foldAt, a.foldLits, a.long, a.depth, a.split, len(a.lits)}
	}
	if !reflect.DeepEqual(tables(a), tables(want)) {
		t.Fatal("builtin_ac.go's tables differ from newAC's")
	}
	states := len(a.outAt) - 1
	for i, tr := range a.trans {
		if int(tr&^acOut) >= states {
			t.Fatalf("transition %d leads to state %d of %d", i, tr&^acOut, states)
		}
	}
	other := append(slices.Clone(a.lits), "a literal of another rule set")
	c := builtinAC(other)
	if inTable(c) {
		t.Fatal("a set with other literals took the built-in tables")
	}
	if len(c.lits) != len(other) {
		t.Fatalf("%d literals, want %d", len(c.lits), len(other))
	}
	text := "x a literal of another rule set, Traceback (most recent call last):"
	if got, want := sortMatches(c.findAll(nil, text)), sortMatches(naiveFind(other, text)); !slices.Equal(got, want) || len(want) < 2 {
		t.Fatalf("got %v, want %v", got, want)
	}
}
