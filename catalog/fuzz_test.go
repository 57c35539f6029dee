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
	fuzzExtract(f, []string{
		"def f():\n    raise ValueError(f\"bad {x!r:>4} value\" \"tail\")\n",
		"logger.error('a %s b' % x)\nlogger.info(\"\"\"multi\nline {}\"\"\".format(1))\n",
		"raise RuntimeError(\"x\" + str(y) + 'z')\nclass A:\n  def g(self):\n    self.logger.exception(rb'\\q')\n",
		"x = (((((((\n", "'''unterminated", "raise", "\\\n\\",
	}, MaxFormatBytes+256, func(src []byte) []Raw { return PyExtract("a/b.py", src) })
}

func FuzzCExtract(f *testing.F) {
	fuzzExtract(f, []string{
		"static void f(int x) {\n  LOG_ERR(\"%s: failed to load '%s'\\n\", __func__, p);\n  GGML_ASSERT(x > 0 && \"bad\");\n}\n",
		"void g() const noexcept { throw std::runtime_error(string_format(\"err %d\", 1)); }",
		"auto s = R\"xx(raw ) \" string)xx\"; fprintf(stderr, \"a\" \"b\\n\");",
		"/* unterminated", "R\"(", "#define X \\\n  LOG_ERR(\"no\")\n", "((((((((((",
	}, MaxFormatBytes+1024,
		func(src []byte) []Raw { return CExtract("src/x.cpp", src) },
		func(src []byte) []Raw { return RustExtract("src/x.rs", src) })
}

func FuzzShellExtract(f *testing.F) {
	fuzzExtract(f, []string{
		"f() {\n  echo \"a $X ${Y:-z} $(du -h \"$P\" | cut -f1)\" >&2\n  exit 1; }\n",
		"*) echo \"usage: x\" >&2; exit 2 ;;\n", "echo \"unterminated\n", "echo 'a' \\\n", "$(((((", "if x; then\n echo \"e\" >&2\n fi\n",
	}, MaxFormatBytes+256, func(src []byte) []Raw { return ShellExtract("deploy/run.sh", src) })
}

// fuzzExtract seeds f and checks that each extractor, on any source, ends
// within extractBudget and returns no format longer than most bytes.
func fuzzExtract(f *testing.F, seeds []string, most int, extract ...func(src []byte) []Raw) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fuzzcost.Check(t, extractBudget, func() {
			for _, x := range extract {
				for _, r := range x(src) {
					if len(r.Format) > most {
						t.Fatalf("format of %d bytes", len(r.Format))
					}
				}
			}
		})
	})
}
