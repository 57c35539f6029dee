package rules

import (
	"fmt"
	"reflect"
	"regexp/syntax"
	"slices"
	"testing"
	"unsafe"
)

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
		f, ok := decodeFacts(e.facts)
		wantF, err := deriveFacts(e.src)
		if err != nil {
			t.Fatal(err)
		}
		if !ok || !reflect.DeepEqual(f, wantF) {
			t.Fatalf("%q: facts %+v, derived %+v", e.src, f, wantF)
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

// TestBuiltinTreesLoadTheSame: the Set LoadBuiltin builds with the table is
// the one it builds parsing and analysing every pattern, field by field;
// and wrong facts in the table show there.
func TestBuiltinTreesLoadTheSame(t *testing.T) {
	withTable, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	loadWith := func(table []encodedTree) (*Set, error) {
		saved := builtinTrees
		builtinTrees = table
		defer func() { builtinTrees = saved }()
		return LoadBuiltin()
	}
	parsed, err := loadWith(nil)
	if err != nil {
		t.Fatal(err)
	}
	if ok, path := sameData(reflect.ValueOf(withTable), reflect.ValueOf(parsed), map[visit]bool{}, "Set"); !ok {
		t.Fatalf("the Set built from the table differs from the parsed one at %s", path)
	}
	// Tables whose facts are wrong, one fact at a time: the Load fails or
	// builds another Set.
	for _, c := range []struct {
		what  string
		wrong func(f *patternFacts) bool
	}{
		{"a required literal fewer", func(f *patternFacts) bool {
			f.lits = f.lits[min(1, len(f.lits)):]
			return len(f.lits) > 0
		}},
		{"a literal set fewer", func(f *patternFacts) bool {
			f.sets = f.sets[min(1, len(f.sets)):]
			return len(f.sets) > 0
		}},
		{"one capture more", func(f *patternFacts) bool { f.numSubexp++; return true }},
		{"a capture renamed", func(f *patternFacts) bool {
			if len(f.names) < 2 {
				return false
			}
			f.names = append(slices.Clone(f.names[:1]), "x"+f.names[1])
			return true
		}},
		{"a start literal fewer", func(f *patternFacts) bool {
			f.starts = f.starts[min(1, len(f.starts)):]
			return len(f.starts) > 0
		}},
		{"a longer span", func(f *patternFacts) bool { f.span++; return f.span > 0 }},
		{"a stop byte more", func(f *patternFacts) bool { had := f.stops.has('~'); f.stops.add('~'); return !had }},
		{"no plain literal", func(f *patternFacts) bool { ok := f.plainOK; f.plainOK = false; return ok }},
	} {
		wrong := slices.Clone(builtinTrees)
		changed := 0
		for i, e := range wrong {
			if f, _ := decodeFacts(e.facts); c.wrong(f) {
				wrong[i].facts = encodeFacts(f)
				changed++
			}
		}
		if changed < 3 {
			t.Fatalf("%s: %d patterns have such a fact", c.what, changed)
		}
		s, err := loadWith(wrong)
		if err != nil {
			continue
		}
		if ok, _ := sameData(reflect.ValueOf(withTable), reflect.ValueOf(s), map[visit]bool{}, "Set"); ok {
			t.Errorf("a Set built from facts with %s compares equal", c.what)
		}
	}
}

// visit is a pair of pointers sameData has compared, or is comparing.
type visit struct {
	a, b unsafe.Pointer
	t    reflect.Type
}

// sameData is reflect.DeepEqual for Sets, which hold funcs: it skips func
// and chan values and compares everything else, unexported fields
// included. path names the first difference.
func sameData(a, b reflect.Value, seen map[visit]bool, path string) (bool, string) {
	if a.Type() != b.Type() {
		return false, path + ": type"
	}
	switch a.Kind() {
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return true, ""
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil(), path + ": nil"
		}
		if a.Kind() != reflect.Interface && (a.Kind() != reflect.Slice || a.Len() > 0) {
			v := visit{a.UnsafePointer(), b.UnsafePointer(), a.Type()}
			if seen[v] {
				return true, ""
			}
			seen[v] = true
		}
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		return sameData(a.Elem(), b.Elem(), seen, path)
	case reflect.Struct:
		for i := range a.NumField() {
			if ok, p := sameData(a.Field(i), b.Field(i), seen, path+"."+a.Type().Field(i).Name); !ok {
				return false, p
			}
		}
		return true, ""
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false, path + ": length"
		}
		for i := range a.Len() {
			if ok, p := sameData(a.Index(i), b.Index(i), seen, fmt.Sprintf("%s[%d]", path, i)); !ok {
				return false, p
			}
		}
		return true, ""
	case reflect.Map:
		if a.Len() != b.Len() {
			return false, path + ": length"
		}
		for it := a.MapRange(); it.Next(); {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() {
				return false, fmt.Sprintf("%s[%v]: missing", path, it.Key())
			}
			if ok, p := sameData(it.Value(), bv, seen, fmt.Sprintf("%s[%v]", path, it.Key())); !ok {
				return false, p
			}
		}
		return true, ""
	case reflect.Bool:
		return a.Bool() == b.Bool(), path
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int(), path
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint(), path
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float(), path
	case reflect.String:
		return a.String() == b.String(), path
	}
	return false, path + ": a " + a.Kind().String()
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

func FuzzDecodeFacts(f *testing.F) {
	for _, e := range builtinTrees[:min(len(builtinTrees), 64)] {
		f.Add(e.facts)
	}
	f.Fuzz(func(t *testing.T, enc string) {
		f, ok := decodeFacts(enc)
		if !ok {
			return
		}
		if again := encodeFacts(f); again != enc {
			t.Fatalf("%q decoded to %+v, which encodes as %q", enc, f, again)
		}
	})
}
