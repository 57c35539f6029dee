package rules

import (
	"bytes"
	"os"
	"reflect"
	"regexp/syntax"
	"testing"
)

func TestBuiltinTreesCurrent(t *testing.T) {
	want, err := TreesSource(Builtin)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("builtin_trees.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("builtin_trees.go is stale: run go generate ./rules")
	}
}

// sameTree reports whether a and b are the same tree in every field but
// the parser's inline storage (Sub0, Rune0).
func sameTree(a, b *syntax.Regexp) bool {
	if a.Op != b.Op || a.Flags != b.Flags || a.Min != b.Min || a.Max != b.Max || a.Cap != b.Cap || a.Name != b.Name ||
		!reflect.DeepEqual(a.Rune, b.Rune) || len(a.Sub) != len(b.Sub) {
		return false
	}
	for i := range a.Sub {
		if !sameTree(a.Sub[i], b.Sub[i]) {
			return false
		}
	}
	return true
}

// TestBuiltinTreesDecode: every tree of the table decodes to what
// syntax.Parse makes of its pattern, and every pattern LoadBuiltin parses
// is in the table.
func TestBuiltinTreesDecode(t *testing.T) {
	if len(builtinTrees) < 500 {
		t.Fatalf("builtinTrees holds %d patterns", len(builtinTrees))
	}
	for _, e := range builtinTrees {
		want, err := syntax.Parse(e.src, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		got := builtinTree(e.src)
		if got == nil || !sameTree(got, want) || got.String() != want.String() {
			t.Fatalf("%q: decoded %v, parsed %v", e.src, got, want)
		}
	}
	srcs, err := loadedPatterns(Builtin)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range srcs {
		if builtinTree(src) == nil {
			t.Errorf("%q is not in builtinTrees", src)
		}
	}
	if builtinTree("(?:not a built-in pattern)") != nil {
		t.Error("a pattern the table lacks has a tree")
	}
}

// TestBuiltinTreesLoadTheSame: the rule set LoadBuiltin builds from the
// table's trees has the prefilter (literals, automaton, matchers' spans)
// of one built from parsing every pattern.
func TestBuiltinTreesLoadTheSame(t *testing.T) {
	withTable, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	table := builtinTrees
	builtinTrees = nil
	parsed, err := LoadBuiltin()
	builtinTrees = table
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withTable.pre, parsed.pre) {
		t.Fatal("the prefilter built from the table's trees differs from the parsed one")
	}
	if len(withTable.pre.users) < 500 {
		t.Fatalf("the prefilter has %d literals", len(withTable.pre.users))
	}
}

// TestDecodeTreeRejects: a cut or corrupted encoding decodes to nil (the
// pattern is then parsed), never a partial tree or a panic.
func TestDecodeTreeRejects(t *testing.T) {
	re, err := syntax.Parse(`(?P<n>a+|[b-d]{2,5})x`, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	enc := encodeTree(re)
	if got := decodeTree(enc); got == nil || !sameTree(got, re) {
		t.Fatalf("round trip: %v", got)
	}
	for n := range len(enc) {
		if got := decodeTree(enc[:n]); got != nil {
			t.Fatalf("cut at %d of %d decoded to %v", n, len(enc), got)
		}
	}
	if got := decodeTree(enc + "\x00"); got != nil {
		t.Fatalf("a trailing byte decoded to %v", got)
	}
	// One OpEmptyMatch node: its flags must fit syntax.Flags (16 bits),
	// and a number must be in its shortest form.
	node := func(flags string) string { return "\x01\x00\x00\x02" + flags + "\x00\x00\x00\x00\x00\x00" }
	if got := decodeTree(node("\xff\xff\x03")); got == nil || got.Flags != 0xffff {
		t.Fatalf("flags 0xffff decoded to %v", got)
	}
	for _, flags := range []string{"\x80\x80\x04", "\x80\x00"} {
		if got := decodeTree(node(flags)); got != nil {
			t.Fatalf("flags %q decoded to %v (flags %#x)", flags, got, got.Flags)
		}
	}
}

func FuzzDecodeTree(f *testing.F) {
	for _, e := range builtinTrees[:min(len(builtinTrees), 64)] {
		f.Add(e.tree)
	}
	f.Fuzz(func(t *testing.T, enc string) {
		re := decodeTree(enc)
		if re == nil {
			return
		}
		// What decodes encodes back to itself.
		if again := encodeTree(re); again != enc {
			t.Fatalf("%q decoded to %v, which encodes as %q", enc, re, again)
		}
	})
}
