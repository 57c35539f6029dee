package main

import (
	"strings"
	"testing"
)

// TestCommandHelp: every command's -h/--help lists its own flags on stdout
// and succeeds.
func TestCommandHelp(t *testing.T) {
	for cmd, flags := range map[string][]string{
		"explain":    {"-format", "-o", "-rules"},
		"replay":     {"-db", "-rules", "-loki-url", "-loki-max-age", "-notes"},
		"serve":      {"-db", "-listen", "-journal-dir", "-journal-reader", "-allowed-hosts", "-max-connections"},
		"ladder":     {"-db", "-target", "-o"},
		"rules test": nil,
		"rules lint": nil,
	} {
		for _, h := range []string{"-h", "--help"} {
			out := runCmd(t, append(strings.Fields(cmd), h)...)
			if !strings.HasPrefix(out, "usage: analyzer "+cmd) {
				t.Errorf("%s %s: %q", cmd, h, out)
			}
			for _, f := range flags {
				if !strings.Contains(out, "  "+f+" ") && !strings.Contains(out, "  "+f+"\n") {
					t.Errorf("%s %s does not list %s", cmd, h, f)
				}
			}
		}
	}
}

// TestFlagsAfterFiles: flags may follow the files, -o is --format, and
// "--" ends the flags.
func TestFlagsAfterFiles(t *testing.T) {
	const day = "../../examples/dankclaw-day.journal.json"
	before := runCmd(t, "explain", "--format", "json", day)
	for _, args := range [][]string{{"explain", day, "--format", "json"}, {"explain", day, "-o", "json"}, {"explain", "-o=json", day}} {
		if got := runCmd(t, args...); got != before {
			t.Errorf("%v: output differs from explain --format json FILE", args)
		}
	}
	if err := run(t.Context(), []string{"explain", "--", "-o"}); err == nil || !strings.Contains(err.Error(), "-o") {
		t.Errorf(`explain -- -o: %v, want the file "-o" not found`, err)
	}
}

// TestVersion: --version prints the build's version and Go's.
func TestVersion(t *testing.T) {
	out := runCmd(t, "--version")
	if !strings.HasPrefix(out, "analyzer ") || !strings.Contains(out, " go1.") {
		t.Errorf("--version: %q", out)
	}
}
