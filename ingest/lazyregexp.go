package ingest

import (
	"regexp"
	"sync"
)

// lazyRegexp returns a function that compiles src (regexp.MustCompile) on
// its first call and returns the same Regexp on every call. The text
// formats' patterns were most of the package's initialization (2.5 ms per
// command), which a command reading journal JSON never uses. Safe for
// concurrent use.
func lazyRegexp(src string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })
}
