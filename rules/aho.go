package rules

import "slices"

// acAutomaton finds every occurrence, overlapping, of a set of literals in
// a text (Aho-Corasick). It replaces github.com/coregx/ahocorasick for the
// prefilter because make bench showed two costs of the library there: its
// FindAllOverlapping returns a new slice per line (4 % of a serving
// journal's replay, and garbage), and its DFA over case-sensitive byte
// classes took 6.4 MB for the built-in rules (two thirds of the compiled
// rule set, and cache misses on every byte).
//
// The DFA here reads the text with ASCII letters folded to lower case, so
// the literals' case spellings ("Error", "error", "ERROR") share states and
// the alphabet fits a stride of 64, and it holds only the first acDepth
// bytes of each literal; each candidate it finds is then compared with the
// literal's exact bytes, so the matches are exactly the case-sensitive
// ones.
//
// The tables are flat arrays of numbers, so the built-in rules' automaton
// can be made by go generate and read in place (builtin_ac.go).
type acAutomaton struct {
	trans []uint16 // state<<shift + class → next state, acOut set when it has output
	class [256]byte
	shift uint // log2(stride)
	// The folded patterns ending at state s, its own and those of its
	// suffix states, are outs[outAt[s]:outAt[s+1]].
	outAt []uint32
	outs  []int32
	// Folded pattern f is foldN[f] bytes long and stands for the literals
	// foldLits[foldAt[f]:foldAt[f+1]].
	foldN    []int32
	foldAt   []uint32
	foldLits []int32
	lits     []string // literal id → its exact bytes
	long     bool     // some literal is longer than the DFA's depth
	depth    int      // the most bytes of a literal the DFA holds
	split    int      // texts this long or longer are read as two halves at once (findAll)
	split4   int      // and these as four quarters
	// head[li] is lits[li]'s first 16 bytes as two little-endian words,
	// with the masks of the bytes it has (litHeads): hits compares them
	// before the literal, most of which it rejects.
	head []litHead
}

// acFolded is one lower-cased literal: its length and the literals
// (exact spellings) that fold to it.
type acFolded struct {
	n    int
	lits []int32
}

// acMatch is one occurrence of literal Lit at text[Start:End].
type acMatch struct {
	Lit, Start, End int
}

// acOut marks a transition into a state with output; the other 15 bits
// are the state, so a DFA holds at most acMaxStates. Two bytes a
// transition, not a premultiplied uint32, halve the table: the walk's
// extra shift cost 5 % on the example lines (all in L1), and on 200k-line
// journals, where the judge evicts the table between lines, it ran as
// fast; loading the rules takes ~260 fewer page faults (7 % of the fixed
// cost on this VM, where a fault costs ~15 µs).
const (
	acOut       = 1 << 15
	acMaxStates = acOut - 1
)

// acDepth is the most bytes of a literal a rule set's DFA holds. The
// table's size follows its states, and past the first bytes a
// literal's states are mostly its own: at 8 bytes the built-in rules need
// 3,439 states (440 KB) against 17,315 for whole literals, and with
// four-byte transitions make bench's night journal, whose lines
// reach many states, ran 9 % faster (the scan waits on the table's loads).
const acDepth = 8

func foldByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// newAC builds the automaton of lits (literal id = index) whose DFA holds
// the first depth bytes of each, or fewer when that many states would not
// fit acMaxStates. Empty literals are never found.
func newAC(lits []string, depth int) *acAutomaton {
	folded, foldedID := foldLiterals(lits, depth)
	for depth > 1 && trieStates(folded) > acMaxStates {
		depth--
		folded, foldedID = foldLiterals(lits, depth)
	}
	a := &acAutomaton{lits: lits, split: acSplit, split4: acSplit4}
	byFolded := make([]acFolded, len(folded))
	for i, l := range lits {
		if l == "" {
			continue
		}
		id := foldedID[i]
		f := &byFolded[id]
		f.n = len(folded[id])
		f.lits = append(f.lits, int32(i))
		a.depth = max(a.depth, f.n)
		a.long = a.long || len(l) > f.n
	}
	// Byte classes: 0 for bytes no literal has; an upper-case letter gets
	// its lower case's class.
	nclass := 1
	for _, f := range folded {
		for i := 0; i < len(f); i++ {
			if a.class[f[i]] == 0 {
				a.class[f[i]] = byte(nclass)
				nclass++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		a.class[c] = a.class[c+'a'-'A']
	}
	stride := 1
	for stride < nclass {
		stride *= 2
		a.shift++
	}
	// Trie (next state 0: no child yet; state 0 is the root). One state per
	// distinct prefix of the folded literals, and the root: counted first,
	// so the table (kept for the set's life) is no larger.
	size := trieStates(folded)
	a.trans = make([]uint16, size<<a.shift)
	out := make([][]int32, 1, size)
	for id, f := range folded {
		s := 0
		for i := 0; i < len(f); i++ {
			t := s<<a.shift + int(a.class[f[i]])
			if a.trans[t] == 0 {
				a.trans[t] = uint16(len(out))
				out = append(out, nil)
			}
			s = int(a.trans[t])
		}
		out[s] = append(out[s], int32(id))
	}
	// Breadth first: failure links, outputs of suffix states, and the
	// missing transitions (the DFA).
	fail := make([]int, len(out))
	queue := make([]int, 0, len(out))
	for c := 1; c < stride; c++ {
		if next := int(a.trans[c]); next != 0 {
			queue = append(queue, next)
		}
	}
	for qi := 0; qi < len(queue); qi++ {
		s := queue[qi]
		f := fail[s]
		out[s] = append(out[s], out[f]...)
		row, frow := a.trans[s<<a.shift:][:stride], a.trans[f<<a.shift:][:stride]
		for c := 1; c < stride; c++ {
			next := int(row[c])
			if next == 0 {
				row[c] = frow[c]
				continue
			}
			fail[next] = int(frow[c])
			queue = append(queue, next)
		}
	}
	for i, next := range a.trans {
		if len(out[next]) > 0 {
			a.trans[i] |= acOut
		}
	}
	a.outAt = make([]uint32, 0, len(out)+1)
	for _, o := range out {
		a.outAt = append(a.outAt, uint32(len(a.outs)))
		a.outs = append(a.outs, o...)
	}
	a.outAt = append(a.outAt, uint32(len(a.outs)))
	a.foldN = make([]int32, len(byFolded))
	a.foldAt = make([]uint32, 0, len(byFolded)+1)
	for i, f := range byFolded {
		a.foldN[i] = int32(f.n)
		a.foldAt = append(a.foldAt, uint32(len(a.foldLits)))
		a.foldLits = append(a.foldLits, f.lits...)
	}
	a.foldAt = append(a.foldAt, uint32(len(a.foldLits)))
	a.head = litHeads(lits)
	return a
}

// foldLiterals returns the distinct lower-cased first depth bytes of lits
// (empty ones left out) and, for each literal, the index of its own.
func foldLiterals(lits []string, depth int) (folded []string, id []int32) {
	seen := map[string]int32{}
	id = make([]int32, len(lits))
	for i, l := range lits {
		if l == "" {
			continue
		}
		b := []byte(l[:min(len(l), depth)])
		for j := range b {
			b[j] = foldByte(b[j])
		}
		f := string(b)
		n, ok := seen[f]
		if !ok {
			n = int32(len(folded))
			seen[f] = n
			folded = append(folded, f)
		}
		id[i] = n
	}
	return folded, id
}

// trieStates returns the states of a trie of words: the root and one per
// distinct non-empty prefix.
func trieStates(words []string) int {
	sorted := slices.Clone(words)
	slices.Sort(sorted)
	n, prev := 1, ""
	for _, w := range sorted {
		common := 0
		for common < len(w) && common < len(prev) && w[common] == prev[common] {
			common++
		}
		n += len(w) - common
		prev = w
	}
	return n
}

// acSplit is the shortest text findAll reads as two halves at once. Each
// byte's step waits on the previous step's table load; two independent
// walks overlap those waits (BenchmarkPrefilterAutomaton, the example
// journals' messages: 177 → 141 µs; 32 did as well as 64, 128 gave 157).
const acSplit = 64

// acSplit4 is the shortest text findAll reads as four quarters at once
// (when each quarter is at least twice the DFA's depth: 64 bytes at depth
// 8). The table does not fit the first-level cache, and four walks
// overlap twice the waits: the first 20,000 messages of a serving
// journal 7.27 → 7.00 ms, of a night journal 15.07 → 13.00 ms (p25 of 10
// runs; 128 gave 7.39 and 13.81).
const acSplit4 = 64

// findAll appends to dst every occurrence of every literal in text
// (overlapping, by end then by start) and returns it.
//
// A long text is read as two walks interleaved: one over text[:mid], one
// from root at mid-depth to the end that reports only what ends past mid.
// The DFA's state is the longest suffix of the text read that is a prefix
// of a literal's first depth bytes, so after depth bytes the second walk is
// in the state a single walk would be. What the second walk finds while
// the first is still going is kept aside (up to 16 hits; more, and the
// text is read again as one walk). A longer text is read the same way as
// four walks, one per quarter (walk4).
func (a *acAutomaton) findAll(dst []acMatch, text string) []acMatch {
	n0 := len(dst)
	var ok bool
	switch {
	case len(text) >= a.split4 && len(text)/4 >= 2*a.depth:
		if dst, ok = a.walk4(dst, text); !ok {
			dst = a.walk(dst[:n0], text, 0, 0)
		}
	case len(text) >= a.split && len(text) >= 2*a.depth:
		if dst, ok = a.walk2(dst, text); !ok {
			dst = a.walk(dst[:n0], text, 0, 0)
		}
	default:
		dst = a.walk(dst, text, 0, 0)
	}
	if a.long {
		orderMatches(dst[n0:])
	}
	return dst
}

// walk appends the occurrences ending in text[from:], in state s at from.
func (a *acAutomaton) walk(dst []acMatch, text string, from int, s uint32) []acMatch {
	trans, class, shift := a.trans, &a.class, a.shift
	for i := from; i < len(text); i++ {
		s = uint32(trans[s<<shift+uint32(class[text[i]])])
		if s&acOut == 0 {
			continue
		}
		s &^= acOut
		dst = a.hits(dst, text, s, i+1)
	}
	return dst
}

// keptHit is a hit a later walk of walk2 or walk4 keeps aside until the
// walks before it are done: the state (its acOut cleared) and where it ends.
type keptHit struct {
	end int
	s   uint32
}

// walk2 is walk from 0 as two interleaved walks (findAll); false when the
// second found more than it can keep aside, with dst then holding part.
func (a *acAutomaton) walk2(dst []acMatch, text string) ([]acMatch, bool) {
	trans, class, shift := a.trans, &a.class, a.shift
	mid := len(text) / 2
	from := mid - a.depth
	var kept [16]keptHit
	nk := 0
	var s1, s2 uint32
	second := text[from:]
	for i := range mid {
		s1 = uint32(trans[s1<<shift+uint32(class[text[i]])])
		s2 = uint32(trans[s2<<shift+uint32(class[second[i]])])
		if (s1|s2)&acOut == 0 {
			continue
		}
		if s1&acOut != 0 {
			s1 &^= acOut
			dst = a.hits(dst, text, s1, i+1)
		}
		if s2&acOut != 0 {
			s2 &^= acOut
			if end := from + i + 1; end > mid {
				if nk == len(kept) {
					return dst, false
				}
				kept[nk] = keptHit{end, s2}
				nk++
			}
		}
	}
	for _, h := range kept[:nk] {
		dst = a.hits(dst, text, h.s, h.end)
	}
	return a.walk(dst, text, from+mid, s2), true
}

// walk4 is walk from 0 as four interleaved walks, one per quarter of
// text, each but the first starting depth bytes before its quarter (see
// findAll); false when one found more than it can keep aside, with dst
// then holding part. Four waits on the table overlap where walk2 has two:
// the table (3,438 states of 64 classes for the built-in rules, 430 KB)
// is read from the second-level cache.
func (a *acAutomaton) walk4(dst []acMatch, text string) ([]acMatch, bool) {
	trans, class, shift := a.trans, &a.class, a.shift
	q, d := len(text)/4, a.depth
	steps := q + d
	t1, t2, t3, t4 := text[:steps], text[q-d:2*q], text[2*q-d:3*q], text[3*q-d:4*q]
	t2, t3, t4 = t2[:steps], t3[:steps], t4[:steps]
	var kept [3][16]keptHit
	var nk [3]int
	// keep keeps aside a hit of walk k+2 that ends in its own quarter;
	// false when there is no room left.
	keep := func(k int, end int, s uint32) bool {
		if end <= (k+1)*q {
			return true
		}
		if nk[k] == len(kept[k]) {
			return false
		}
		kept[k][nk[k]] = keptHit{end, s}
		nk[k]++
		return true
	}
	var s1, s2, s3, s4 uint32
	for i := range steps {
		s1 = uint32(trans[s1<<shift+uint32(class[t1[i]])])
		s2 = uint32(trans[s2<<shift+uint32(class[t2[i]])])
		s3 = uint32(trans[s3<<shift+uint32(class[t3[i]])])
		s4 = uint32(trans[s4<<shift+uint32(class[t4[i]])])
		if (s1|s2|s3|s4)&acOut == 0 {
			continue
		}
		if s1&acOut != 0 {
			// The first walk's own quarter ends at q; the second reports
			// what ends after it.
			if s1 &^= acOut; i < q {
				dst = a.hits(dst, text, s1, i+1)
			}
		}
		if s2&acOut != 0 {
			if s2 &^= acOut; !keep(0, q-d+i+1, s2) {
				return dst, false
			}
		}
		if s3&acOut != 0 {
			if s3 &^= acOut; !keep(1, 2*q-d+i+1, s3) {
				return dst, false
			}
		}
		if s4&acOut != 0 {
			if s4 &^= acOut; !keep(2, 3*q-d+i+1, s4) {
				return dst, false
			}
		}
	}
	for k := range kept {
		for _, h := range kept[k][:nk[k]] {
			dst = a.hits(dst, text, h.s, h.end)
		}
	}
	return a.walk(dst, text, 4*q, s4), true
}

// hits appends the literals of state s (its acOut cleared) that end at
// end in text.
func (a *acAutomaton) hits(dst []acMatch, text string, s uint32, end int) []acMatch {
	for _, f := range a.outs[a.outAt[s]:a.outAt[s+1]] {
		start := end - int(a.foldN[f])
		for _, li := range a.foldLits[a.foldAt[f]:a.foldAt[f+1]] {
			l := a.lits[li]
			if len(l) > len(text)-start {
				continue
			}
			// The DFA matched the literal's first bytes case-folded; most
			// candidates differ in case or in the bytes after them (three
			// in ten matched on the night journal). Two word compares
			// decide a literal of up to 16 bytes and reject most others
			// before the byte compare.
			if start+16 <= len(text) {
				h := &a.head[li]
				t := text[start : start+16]
				if le64(t[:8])&h.mask[0] != h.word[0] || le64(t[8:])&h.mask[1] != h.word[1] ||
					len(l) > 16 && text[start+16:start+len(l)] != l[16:] {
					continue
				}
			} else if text[start:start+len(l)] != l {
				continue
			}
			dst = append(dst, acMatch{Lit: int(li), Start: start, End: start + len(l)})
		}
	}
	return dst
}

// litHead is a literal's first 16 bytes as two little-endian words (le64)
// and the masks of the bytes it has: a shorter literal's words end in
// zeros, and so do its masks.
type litHead struct{ word, mask [2]uint64 }

// litHeads returns the heads of lits (acAutomaton.head).
func litHeads(lits []string) []litHead {
	hs := make([]litHead, len(lits))
	for i, l := range lits {
		for j := range min(len(l), 16) {
			hs[i].word[j/8] |= uint64(l[j]) << (8 * (j % 8))
			hs[i].mask[j/8] |= 0xff << (8 * (j % 8))
		}
	}
	return hs
}

// le64 is the little-endian word of s's first 8 bytes (the compiler makes
// it one load).
func le64(s string) uint64 {
	s = s[:8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// orderMatches sorts ms by end, then by start: a literal longer than the
// DFA is found where its first bytes end. Insertion sort: a match moves
// back only past those ending within its literal's length, and a line has
// few.
func orderMatches(ms []acMatch) {
	for i := 1; i < len(ms); i++ {
		m, j := ms[i], i
		for ; j > 0 && (ms[j-1].End > m.End || ms[j-1].End == m.End && ms[j-1].Start > m.Start); j-- {
			ms[j] = ms[j-1]
		}
		ms[j] = m
	}
}
