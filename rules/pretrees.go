package rules

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"math"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The parse trees of the built-in rules' patterns, and what the literal
// analyses derive from them, made ahead of time. Every Load parsed each
// pattern (regexp/syntax) and derived its required literals and literal
// sets: half of LoadBuiltin's time, most of it allocations, one or more
// per rune and node. builtin_trees.go holds, per pattern, its tree in a
// compact encoding (encodeTree), which decodeTree rebuilds in three
// allocations when a Load first asks for it, and every analysis' result
// (patternFacts, encodeFacts): with those, a Load decodes a tree only for
// the prefix DFAs. Static syntax.Regexp values in the binary were no
// faster than decoding, but they added 0.9 MB of pointers to its data,
// resident for the whole run and scanned by every GC cycle; the encoding
// is a quarter of that size and read only while loading. Trees and facts
// are functions of the pattern's text alone, so the table needs no
// digest: a pattern it lacks is parsed and analysed as before.
// TestGeneratedFilesAreCurrent fails when the table is stale, when a Go
// release parses a pattern differently or when an analysis changes; go
// generate ./rules writes it again.

// encodedTree is a pattern's source, its encoded syntax.Parse(src,
// syntax.Perl) tree, and its encoded facts (encodeFacts).
type encodedTree struct {
	src, tree, facts string
}

// builtinTrees is builtin_trees.go's table, sorted by src; nil without it.
var builtinTrees []encodedTree

// builtinEntry returns the entry of src in builtinTrees, or nil.
func builtinEntry(src string) *encodedTree {
	i, ok := slices.BinarySearchFunc(builtinTrees, src, func(p encodedTree, s string) int { return strings.Compare(p.src, s) })
	if !ok {
		return nil
	}
	return &builtinTrees[i]
}

// builtinTree returns the tree of src from builtinTrees, or nil.
func builtinTree(src string) *syntax.Regexp {
	if e := builtinEntry(src); e != nil {
		return decodeTree(e.tree)
	}
	return nil
}

// patternFacts is what a Load's analyses derive from one pattern's tree:
// with it, a built-in pattern's tree is decoded only for the prefix DFAs.
// Loads share it: its slices are read, never written.
type patternFacts struct {
	lits      []string   // requiredLiterals
	sets      [][]string // literalSets
	progSize  int        // progSize of the simplified tree (compileRE's cap)
	numSubexp int        // the tree's MaxCap
	names     []string   // the tree's CapNames
	starts    []string   // startLiterals
	span      int        // windowBounds' span: bytes, -1 unbounded
	stops     byteSet    // windowBounds' stop bytes
	plain     string     // plainLiteral, when plainOK
	plainOK   bool
}

// deriveFacts is patternFacts from the pattern's tree, by the analyses
// themselves (go generate, and the tests that hold the table to them).
func deriveFacts(src string) (*patternFacts, error) {
	tree, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, err
	}
	f := &patternFacts{
		lits: deriveRequiredLiterals(src), sets: deriveLiteralSets(src),
		progSize: derivePatternInsts(src), numSubexp: tree.MaxCap(), names: tree.CapNames(),
		starts: deriveStartLiterals(src),
	}
	f.span, f.stops = deriveWindowBounds(src)
	f.plain, f.plainOK = derivePlainLiteral(src)
	return f, nil
}

// errNoFacts: builtinTrees has no (readable) facts of a pattern.
var errNoFacts = errors.New("no built-in facts")

// builtinFacts returns the facts of src from builtinTrees, decoded once per
// Load, or nil.
func builtinFacts(src string) *patternFacts {
	f, _ := memoized(&memo.facts, src, func(s string) (*patternFacts, error) {
		if e := builtinEntry(s); e != nil {
			if f, ok := decodeFacts(e.facts); ok {
				return f, nil
			}
		}
		return nil, errNoFacts
	})
	return f
}

// loadedPatterns returns, sorted, every pattern source a Load of fsys's
// rule files parses through parsePattern or takes facts of from
// builtinTrees (all of them: Load is eager).
func loadedPatterns(fsys fs.FS) ([]string, error) {
	// A Load in progress keeps the memo: begin first, and the Load's own
	// end leaves it for us to read.
	memo.begin()
	defer memo.end()
	if _, err := Load(fsys); err != nil {
		return nil, err
	}
	memo.mu.Lock()
	defer memo.mu.Unlock()
	srcs := make([]string, 0, len(memo.trees)+len(memo.facts))
	for src := range memo.trees {
		srcs = append(srcs, src)
	}
	for src := range memo.facts {
		srcs = append(srcs, src)
	}
	slices.Sort(srcs)
	return slices.Compact(srcs), nil
}

// TreesSource returns the Go source of builtin_trees.go for the rule files
// of fsys (Builtin, from go generate): the parse tree of every pattern a
// Load parses, and its required literals and literal sets, as a sorted
// table. It fails when a file does not load.
func TreesSource(fsys fs.FS) ([]byte, error) {
	srcs, err := loadedPatterns(fsys)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by go generate ./rules (TreesSource); DO NOT EDIT.\n\npackage rules\n\n")
	b.WriteString("func init() { builtinTrees = builtinTreeTable[:] }\n\n")
	fmt.Fprintf(&b, "var builtinTreeTable = [%d]encodedTree{\n", len(srcs))
	for _, src := range srcs {
		tree, err := syntax.Parse(src, syntax.Perl)
		if err != nil {
			return nil, err
		}
		f, err := deriveFacts(src)
		if err != nil {
			return nil, err
		}
		facts := encodeFacts(f)
		fmt.Fprintf(&b, "{%s, %s, %s},\n", strconv.Quote(src), strconv.Quote(encodeTree(tree)), strconv.Quote(facts))
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

// encodeTree returns re in the encoding decodeTree reads, all numbers
// varints: the counts of nodes, subexpressions and runes; then each node
// in preorder as its op (a byte), flags, number of subexpressions and of
// runes (nilOrLen), the runes, Min, Max, Cap, and Name after its length.
// Sub0 and Rune0, the parser's inline storage for Sub and Rune, are left
// out: nothing but the parser reads them.
func encodeTree(re *syntax.Regexp) string {
	var nodes, subs, runes uint64
	var count func(*syntax.Regexp)
	count = func(re *syntax.Regexp) {
		nodes, subs, runes = nodes+1, subs+uint64(len(re.Sub)), runes+uint64(len(re.Rune))
		for _, s := range re.Sub {
			count(s)
		}
	}
	count(re)
	b := binary.AppendUvarint(nil, nodes)
	b = binary.AppendUvarint(b, subs)
	b = binary.AppendUvarint(b, runes)
	var node func(*syntax.Regexp)
	node = func(re *syntax.Regexp) {
		b = append(b, byte(re.Op))
		b = binary.AppendUvarint(b, uint64(re.Flags))
		b = binary.AppendUvarint(b, nilOrLen(re.Sub == nil, len(re.Sub)))
		b = binary.AppendUvarint(b, nilOrLen(re.Rune == nil, len(re.Rune)))
		for _, r := range re.Rune {
			b = binary.AppendUvarint(b, uint64(r))
		}
		b = binary.AppendVarint(b, int64(re.Min))
		b = binary.AppendVarint(b, int64(re.Max))
		b = binary.AppendVarint(b, int64(re.Cap))
		b = binary.AppendUvarint(b, uint64(len(re.Name)))
		b = append(b, re.Name...)
		for _, s := range re.Sub {
			node(s)
		}
	}
	node(re)
	return string(b)
}

// nilOrLen is a slice's length plus one, or 0 for a nil slice: the parser
// leaves some empty slices non-nil, and a tree decodes as it parsed.
func nilOrLen(isNil bool, n int) uint64 {
	if isNil {
		return 0
	}
	return uint64(n) + 1
}

// maxTreeDepth bounds decodeTree's recursion; the built-in patterns nest
// a few levels deep.
const maxTreeDepth = 1000

// decodeTree rebuilds the tree encodeTree wrote: one slice each of the
// nodes, of their subexpression pointers and of their runes. It returns
// nil for anything else (the caller then parses the pattern).
func decodeTree(enc string) *syntax.Regexp {
	d := treeDecoder{data: enc}
	nodes, subs, runes := d.uvarint(), d.uvarint(), d.uvarint()
	if d.bad || nodes == 0 || nodes > uint64(len(enc)) || subs >= nodes || runes > uint64(len(enc)) {
		return nil
	}
	d.nodes = make([]syntax.Regexp, nodes)
	d.subs = make([]*syntax.Regexp, subs)
	d.runes = make([]rune, runes)
	re := d.node(0)
	if d.bad || d.pos != len(enc) || len(d.nodes) != 0 || len(d.subs) != 0 || len(d.runes) != 0 {
		return nil
	}
	return re
}

// treeDecoder is decodeTree's state: the encoding read so far and what is
// left of the three slices.
type treeDecoder struct {
	data  string
	pos   int
	bad   bool
	nodes []syntax.Regexp
	subs  []*syntax.Regexp
	runes []rune
}

// uvarint reads encoding/binary's unsigned varint, in its shortest form.
func (d *treeDecoder) uvarint() uint64 {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if d.pos >= len(d.data) {
			break
		}
		c := d.data[d.pos]
		d.pos++
		if c == 0 && shift > 0 || shift == 63 && c > 1 {
			break // not the shortest form, or past 64 bits
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	d.bad = true
	return 0
}

// varint reads encoding/binary's signed (zig-zag) varint.
func (d *treeDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// node decodes the node at the current position, and its subexpressions.
func (d *treeDecoder) node(depth int) *syntax.Regexp {
	if d.bad || depth > maxTreeDepth || len(d.nodes) == 0 || d.pos >= len(d.data) {
		d.bad = true
		return nil
	}
	re := &d.nodes[0]
	d.nodes = d.nodes[1:]
	re.Op = syntax.Op(d.data[d.pos])
	d.pos++
	flags := d.uvarint()
	nsub, nrune := d.uvarint(), d.uvarint()
	if d.bad || flags > math.MaxUint16 || nsub > uint64(len(d.subs))+1 || nrune > uint64(len(d.runes))+1 {
		d.bad = true
		return nil
	}
	re.Flags = syntax.Flags(flags)
	if nrune > 0 {
		nrune--
		re.Rune, d.runes = d.runes[:nrune:nrune], d.runes[nrune:]
		for i := range re.Rune {
			r := d.uvarint()
			if r > unicode.MaxRune {
				d.bad = true
			}
			re.Rune[i] = rune(r)
		}
	}
	re.Min, re.Max, re.Cap = int(d.varint()), int(d.varint()), int(d.varint())
	if n := d.uvarint(); n > 0 {
		if n > uint64(len(d.data)-d.pos) {
			d.bad = true
			return nil
		}
		re.Name = d.data[d.pos : d.pos+int(n)]
		d.pos += int(n)
	}
	if nsub > 0 {
		nsub--
		re.Sub, d.subs = d.subs[:nsub:nsub], d.subs[nsub:]
		for i := range re.Sub {
			re.Sub[i] = d.node(depth + 1)
		}
	}
	return re
}

// encodeFacts returns f in the encoding decodeFacts reads, all numbers
// varints: lits (nilOrLen, then each string after its length); nilOrLen of
// sets, then each set as lits; progSize; numSubexp; names and starts as
// lits; span (signed); the four words of stops; plain after nilOrLen
// (nil: not plainOK).
func encodeFacts(f *patternFacts) string {
	strs := func(b []byte, l []string) []byte {
		b = binary.AppendUvarint(b, nilOrLen(l == nil, len(l)))
		for _, s := range l {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		return b
	}
	b := strs(nil, f.lits)
	b = binary.AppendUvarint(b, nilOrLen(f.sets == nil, len(f.sets)))
	for _, set := range f.sets {
		b = strs(b, set)
	}
	b = binary.AppendUvarint(b, uint64(f.progSize))
	b = binary.AppendUvarint(b, uint64(f.numSubexp))
	b = strs(b, f.names)
	b = strs(b, f.starts)
	b = binary.AppendVarint(b, int64(f.span))
	for _, w := range f.stops {
		b = binary.AppendUvarint(b, w)
	}
	b = binary.AppendUvarint(b, nilOrLen(!f.plainOK, len(f.plain)))
	if f.plainOK {
		b = append(b, f.plain...)
	}
	return string(b)
}

// decodeFacts reads what encodeFacts wrote; ok is false for anything
// else. The strings are slices of enc.
func decodeFacts(enc string) (f *patternFacts, ok bool) {
	d := treeDecoder{data: enc}
	str := func(n uint64) string {
		if d.bad || n > uint64(len(d.data)-d.pos) {
			d.bad = true
			return ""
		}
		s := d.data[d.pos : d.pos+int(n)]
		d.pos += int(n)
		return s
	}
	strs := func() []string {
		n := d.uvarint()
		if d.bad || n == 0 {
			return nil
		}
		if n-1 > uint64(len(d.data)-d.pos) {
			d.bad = true
			return nil
		}
		l := make([]string, n-1)
		for i := range l {
			l[i] = str(d.uvarint())
		}
		return l
	}
	count := func() int {
		n := d.uvarint()
		if n > math.MaxInt32 {
			d.bad = true
			return 0
		}
		return int(n)
	}
	f = &patternFacts{lits: strs()}
	if n := d.uvarint(); n > 0 && n-1 <= uint64(len(d.data)-d.pos) {
		f.sets = make([][]string, n-1)
		for i := range f.sets {
			f.sets[i] = strs()
		}
	} else if n > 0 {
		d.bad = true
	}
	f.progSize, f.numSubexp = count(), count()
	f.names, f.starts = strs(), strs()
	if span := d.varint(); span >= -1 && span <= math.MaxInt32 {
		f.span = int(span)
	} else {
		d.bad = true
	}
	for i := range f.stops {
		f.stops[i] = d.uvarint()
	}
	if n := d.uvarint(); n > 0 {
		f.plain, f.plainOK = str(n-1), true
	}
	if d.bad || d.pos != len(enc) {
		return nil, false
	}
	return f, true
}
