// Package catalog lists the statements with which an inference engine's source
// announces a fatal error, a boot milestone or its readiness, with a log line
// synthesized from each, so the judge can be measured against wording nobody
// has pasted yet. Catalogs are read from the engines' own source trees
// (Python, C/C++, Go, Rust) and kept as TSV files under catalog/data.
package catalog

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

// Kind is what a statement announces.
type Kind string

// The kinds of statement a catalog holds.
const (
	KindFatal   Kind = "fatal"   // the process or the boot ends (raise, abort, error log)
	KindReady   Kind = "ready"   // the engine's own readiness line
	KindMarker  Kind = "marker"  // a boot milestone: proves a phase, never readiness
	KindRequest Kind = "request" // an error answered to one request; the engine lives on
)

// Statement is one place in an engine's source that prints a line.
type Statement struct {
	Engine  string
	Version string
	File    string // path inside the source tree
	Line    int
	Func    string // enclosing function, "" at module level
	Call    string // raise ValueError, logger.error, LOG_ERR, panic!, slog.Error, ...
	Exc     string // exception or error type, when the call names one
	Kind    Kind
	Family  domain.Verdict // the verdict family the statement implies (fatal only)
	Phase   domain.Phase   // the phase it implies; "" when neither file nor type tells
	Format  string         // the format string as written, holes kept
	Synth   string         // the line it prints, holes filled with plausible values
}

// Limits on what one source file may make the extractors do: sources are
// untrusted input like any log.
const (
	MaxFileBytes   = 4 << 20 // larger files are skipped
	MaxFormatBytes = 2048    // a format string is cut here
	MaxArgDepth    = 64      // bracket nesting followed inside one call
)

var tsvHeader = []string{"engine", "version", "kind", "family", "phase", "file", "line", "func", "call", "exc", "format", "synth"}

func esc(s string) string {
	r := strings.NewReplacer("\\", `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)
	return r.Replace(s)
}

func unesc(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Sort orders statements by kind, file and line, so catalogs diff well.
func Sort(st []Statement) {
	sort.SliceStable(st, func(i, j int) bool {
		a, b := st[i], st[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
}

// WriteTSV writes statements as a catalog file: a header, then one
// statement a line, tabs and newlines inside fields escaped.
func WriteTSV(w io.Writer, st []Statement) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(strings.Join(tsvHeader, "\t") + "\n")
	for _, s := range st {
		f := []string{s.Engine, s.Version, string(s.Kind), string(s.Family), string(s.Phase), s.File,
			strconv.Itoa(s.Line), s.Func, s.Call, s.Exc, s.Format, s.Synth}
		for i := range f {
			f[i] = esc(f[i])
		}
		bw.WriteString(strings.Join(f, "\t") + "\n")
	}
	return bw.Flush()
}

// ReadTSV reads a catalog file written by WriteTSV.
func ReadTSV(r io.Reader) ([]Statement, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []Statement
	n := 0
	for sc.Scan() {
		n++
		if n == 1 {
			continue
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) != len(tsvHeader) {
			return nil, fmt.Errorf("catalog line %d: %d fields, want %d", n, len(f), len(tsvHeader))
		}
		for i := range f {
			f[i] = unesc(f[i])
		}
		line, _ := strconv.Atoi(f[6])
		out = append(out, Statement{Engine: f[0], Version: f[1], Kind: Kind(f[2]), Family: domain.Verdict(f[3]),
			Phase: domain.Phase(f[4]), File: f[5], Line: line, Func: f[7], Call: f[8], Exc: f[9], Format: f[10], Synth: f[11]})
	}
	return out, sc.Err()
}
