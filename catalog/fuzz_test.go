package catalog

import (
	"testing"
	"time"

	"github.com/llmfleet/analyzer/internal/fuzzcost"
)

// Sources are untrusted: whatever bytes a file holds, the extractors end,
// allocate a bounded amount and return formats no longer than the cap.
var extractBudget = fuzzcost.Budget{Bytes: 64 << 20, Time: 2 * time.Second}

func FuzzPyExtract(f *testing.F) {
	for _, s := range []string{
		"def f():\n    raise ValueError(f\"bad {x!r:>4} value\" \"tail\")\n",
		"logger.error('a %s b' % x)\nlogger.info(\"\"\"multi\nline {}\"\"\".format(1))\n",
		"raise RuntimeError(\"x\" + str(y) + 'z')\nclass A:\n  def g(self):\n    self.logger.exception(rb'\\q')\n",
		"x = (((((((\n", "'''unterminated", "raise", "\\\n\\",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fuzzcost.Check(t, extractBudget, func() {
			for _, r := range PyExtract("a/b.py", src) {
				if len(r.Format) > MaxFormatBytes+256 {
					t.Fatalf("format of %d bytes", len(r.Format))
				}
			}
		})
	})
}

func FuzzCExtract(f *testing.F) {
	for _, s := range []string{
		"static void f(int x) {\n  LOG_ERR(\"%s: failed to load '%s'\\n\", __func__, p);\n  GGML_ASSERT(x > 0 && \"bad\");\n}\n",
		"void g() const noexcept { throw std::runtime_error(string_format(\"err %d\", 1)); }",
		"auto s = R\"xx(raw ) \" string)xx\"; fprintf(stderr, \"a\" \"b\\n\");",
		"/* unterminated", "R\"(", "#define X \\\n  LOG_ERR(\"no\")\n", "((((((((((",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fuzzcost.Check(t, extractBudget, func() {
			for _, r := range CExtract("src/x.cpp", src) {
				if len(r.Format) > MaxFormatBytes+1024 {
					t.Fatalf("format of %d bytes", len(r.Format))
				}
			}
			RustExtract("src/x.rs", src)
		})
	})
}

func FuzzShellExtract(f *testing.F) {
	for _, s := range []string{
		"f() {\n  echo \"a $X ${Y:-z} $(du -h \"$P\" | cut -f1)\" >&2\n  exit 1; }\n",
		"*) echo \"usage: x\" >&2; exit 2 ;;\n", "echo \"unterminated\n", "echo 'a' \\\n", "$(((((", "if x; then\n echo \"e\" >&2\n fi\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fuzzcost.Check(t, extractBudget, func() {
			for _, r := range ShellExtract("deploy/run.sh", src) {
				if len(r.Format) > MaxFormatBytes+256 {
					t.Fatalf("format of %d bytes", len(r.Format))
				}
			}
		})
	})
}
