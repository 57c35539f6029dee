package judge

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// llamaUsage is the shape of llama.cpp's option list (common/arg.cpp,
// common_params_print_usage): unindented options, help beside them, the
// environment variable under them.
const llamaUsage = `error: invalid argument: --ctx
----- common params -----

-h,    --help, --usage                  print usage and exit
--version                               show version and build info
-t,    --threads N                      number of threads to use during generation (default: -1)
                                        (env: LLAMA_ARG_THREADS)
--no-warmup                             skip warming up the model with an empty run
--kv-unified, -kvu                      use single unified KV buffer for the KV cache of all sequences
-ctk,  --cache-type-k TYPE              KV cache data type for K
                                        allowed values: f32, f16, bf16, q8_0, q4_0
                                        (default: f16)
                                        (env: LLAMA_ARG_CACHE_TYPE_K)

----- example-specific params -----

--host HOST                             ip address to listen, or bind to an UNIX socket if the address
                                        ends with .sock (default: 127.0.0.1)
                                        (env: LLAMA_ARG_HOST)
`

// TestUsageGrammar: every line of an argparse help and of llama.cpp's
// option list is inside the block; the error after argparse's usage is
// not; log lines that only look like options never open one.
func TestUsageGrammar(t *testing.T) {
	b, err := os.ReadFile("testdata/usage/argparse.txt") // Python 3's argparse, print_help then a rejected argument
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var u usageText
	for i, l := range lines {
		inside, _ := u.step(l)
		last := i == len(lines)-1
		if inside == last {
			t.Errorf("argparse line %d %q: inside %v", i+1, l, inside)
		}
	}
	u = usageText{}
	for i, l := range strings.Split(strings.TrimRight(llamaUsage, "\n"), "\n") {
		inside, first := u.step(l)
		if want := i > 0; inside != want || first != (i == 1) {
			t.Errorf("llama.cpp line %d %q: inside %v first %v", i+1, l, inside, first)
		}
	}
	for _, l := range []string{
		"--- Logging error ---", // Python logging's own error banner
		"- INFO - starting",
		`  File "/usr/lib/python3/dist-packages/vllm/engine/arg_utils.py", line 1204, in create_engine_config`,
		"-1 is not a valid value",
		"--max-model-len 4096 --max-num-seqs 8 \\",
		"----------",
		"INFO 05-06 16:50:05 [api_server.py:1043] vLLM API server version 0.8.5",
		"used: --no-warmup",
		"",
	} {
		var u usageText
		if inside, _ := u.step(l); inside {
			t.Errorf("%q opens a usage block", l)
		}
	}
}

// TestUsageIsNotReadiness: help text that names warmup and readiness moves
// no phase and proves nothing; the usage after a rejected argument is a
// config_error at args.
func TestUsageIsNotReadiness(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	argparse, err := os.ReadFile("testdata/usage/argparse.txt")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"llama.cpp": "build: 6000 (abc1234) with cc (GCC) 13 for x86_64-linux-gnu\n" + llamaUsage,
		"argparse":  "INFO 05-06 16:50:01 [__init__.py:239] Automatically detected platform cuda.\n" + string(argparse),
		// Only the usage: the unit's exit says it failed.
		"usage alone": strings.SplitN(llamaUsage, "\n", 2)[1],
	} {
		t.Run(name, func(t *testing.T) {
			j := New(set, "", Options{})
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			for i, l := range strings.Split(text, "\n") {
				j.Line(l, domain.Evidence{Time: at.Add(time.Duration(i) * time.Millisecond), Message: l})
			}
			a := j.Judge(&domain.Attempt{}, End{Ended: true, Text: true})
			if a.Verdict != domain.VerdictConfigError || a.Phase != domain.PhaseArgs || !a.ReadyAt.IsZero() {
				t.Errorf("verdict %s phase %s ready %v, want config_error at args", a.Verdict, a.Phase, a.ReadyAt)
			}
		})
	}
}
