// Package randline makes random lines out of given pieces, for the tests
// that hold a hand-written reader of a line grammar to the regexp it
// stands for: lines of the grammar's own pieces (delimiters, words,
// blanks, a non-ASCII rune) reach the places where the two could part far
// more often than random bytes do.
package randline

import (
	"math/rand/v2"
	"strings"
)

// Join returns a line of up to max pieces (at least none), each drawn
// from parts by r.
func Join(r *rand.Rand, parts []string, max int) string {
	var b strings.Builder
	for range r.IntN(max + 1) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}
