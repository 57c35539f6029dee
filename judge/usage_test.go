package judge

import (
	"fmt"
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
// ikUsage prints options as ik_llama.cpp's gpt_params_print_usage does
// (common/common.cpp at 8337e4cd3): "usage: PROG [options]", a blank line
// and "GROUP:" before each group, "  %-32s" then the help, which moves to
// the next line, 34 columns in, when the tags are longer than 30.
func ikUsage(prog string, opts [][3]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s [options]\n", prog)
	for _, o := range opts {
		if o[1] == "" {
			fmt.Fprintf(&b, "\n%s:\n\n", o[0])
			continue
		}
		fmt.Fprintf(&b, "  %-32s", o[1])
		if len(o[1]) > 30 {
			fmt.Fprintf(&b, "\n%34s", "")
		}
		b.WriteString(strings.ReplaceAll(o[2], "\n", "\n"+strings.Repeat(" ", 34)) + "\n")
	}
	return b.String()
}

// ikOptions are entries of ik_llama.cpp's option table, as its source
// lists them (the help that mentions warming up included).
var ikOptions = [][3]string{
	{"general", "", ""},
	{"*", "-h,    --help, --usage", "print usage and exit"},
	{"*", "-t,    --threads N", "number of threads to use during generation (default: 16)"},
	{"*", "-c,    --ctx-size N", "size of the prompt context (default: 0, 0 = loaded from model)"},
	{"*", "-ctx-ckpt-i N, --ctx-checkpoints-interval N", "minimum number of tokens between each context checkpoint.  (default: 512, <=0 disable)"},
	{"main", "       --no-warmup", "skip warming up the model with an empty run"},
	{"*", "-m,    --model FNAME", "model path (default: models/$filename with filename from --hf-file\nor --model-url if set, otherwise models/7B/ggml-model-f16.gguf)"},
	{"server", "", ""},
	{"server", "       --host HOST", "ip address to listen (default: 127.0.0.1)"},
	{"server", "       --port PORT", "port to listen (default: 8080)"},
	{"server", "       --metrics", "enable prometheus compatible metrics endpoint (default: disabled)"},
}

func TestUsageIsNotReadiness(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	argparse, err := os.ReadFile("testdata/usage/argparse.txt")
	if err != nil {
		t.Fatal(err)
	}
	sglang, err := os.ReadFile("testdata/usage/sglang.txt")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"llama.cpp": "build: 6000 (abc1234) with cc (GCC) 13 for x86_64-linux-gnu\n" + llamaUsage,
		"argparse":  "INFO 05-06 16:50:01 [__init__.py:239] Automatically detected platform cuda.\n" + string(argparse),
		// ik_llama.cpp's gpt_params_parse prints the exception's text,
		// then server.cpp the usage.
		"ik_llama.cpp": "error: unknown argument: --ctx\n" + ikUsage("./build/bin/llama-server", ikOptions),
		// SGLang's argparse: usage, then the error.
		"sglang": "[2026-01-01 00:00:00] WARNING server_args.py:1111: Attention backend not set.\n" + string(sglang),
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
