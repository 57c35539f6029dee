package catalog

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

func TestPyExtract(t *testing.T) {
	src := []byte(`import logging
logger = logging.getLogger(__name__)

class Loader:
    def load_weights(self, path):
        if not path:
            raise FileNotFoundError(f"no weights at {path}; "
                                    "check --model")
        logger.error("failed %s of %d shards" % (path, n))

def check(x):
    raise ValueError("max_model_len ({}) too large".format(x))

def again():
    try:
        check(1)
    except ValueError as e:
        raise e
`)
	got := PyExtract("vllm/model_executor/model_loader/default_loader.py", src)
	if len(got) != 3 {
		t.Fatalf("got %d statements: %+v", len(got), got)
	}
	if got[0].Func != "load_weights" || got[0].Exc != "FileNotFoundError" || got[0].Format != "no weights at {path}; check --model" || got[0].Line != 7 {
		t.Errorf("raise: %+v", got[0])
	}
	if got[1].Call != "logger.error" || got[1].Format != "failed %s of %d shards" {
		t.Errorf("logger: %+v", got[1])
	}
	if got[2].Func != "check" || got[2].Format != "max_model_len ({}) too large" {
		t.Errorf("format(): %+v", got[2])
	}
	s, _ := Classify(Profiles["vllm"], got[0])
	if s.Family != domain.VerdictMissingPayload || s.Phase != domain.PhaseWeights {
		t.Errorf("classified %s/%s", s.Family, s.Phase)
	}
	if line := fillHoles(got[1].Format, ""); line != "failed x of 2 shards" {
		t.Errorf("synth %q", line)
	}
}

func TestCExtract(t *testing.T) {
	src := []byte(`// comment LOG_ERR("no")
static bool llama_model_load(const std::string & fname) {
    /* LOG_ERR("no") */
    if (!f) {
        LLAMA_LOG_ERROR("%s: failed to open %s\n", __func__, fname.c_str());
        throw std::runtime_error("unknown model architecture: '" + arch + "'");
    }
    GGML_ASSERT(n_dims <= 4);
}
`)
	got := CExtract("src/llama-model-loader.cpp", src)
	if len(got) != 3 {
		t.Fatalf("got %d: %+v", len(got), got)
	}
	if got[0].Func != "llama_model_load" || got[0].Line != 5 || got[0].Format != "%s: failed to open %s\n" {
		t.Errorf("log: %+v", got[0])
	}
	if got[1].Exc != "runtime_error" || got[1].Format != "unknown model architecture: '%s'" {
		t.Errorf("throw: %+v", got[1])
	}
	if got[2].Format != "GGML_ASSERT(n_dims <= 4) failed" {
		t.Errorf("assert: %+v", got[2])
	}
	if line := fillHoles(got[0].Format, got[0].Func); line != "llama_model_load: failed to open /models/Qwen3-8B\n" && line != "llama_model_load: failed to open x\n" {
		t.Errorf("synth %q", line)
	}
}

func TestGoAndRustExtract(t *testing.T) {
	g := GoExtract("server/sched.go", []byte("package x\nfunc run() {\n\tslog.Error(\"load failed\", \"model\", m)\n\tslog.Info(fmt.Sprintf(\"Listening on %s\", a))\n}\n"))
	if len(g) != 2 || g[0].Func != "run" || g[0].Attrs[0] != "model" || g[1].Format != "Listening on %s" {
		t.Fatalf("go: %+v", g)
	}
	r := RustExtract("launcher/src/main.rs", []byte("fn main() {\n    tracing::error!(target: \"x\", \"Shard {rank} failed to start\");\n    panic!(\"bad {}\", 1);\n}\n"))
	if len(r) != 2 || r[0].Format != "Shard {rank} failed to start" || r[1].Call != "panic!" || r[0].Func != "main" {
		t.Fatalf("rust: %+v", r)
	}
}

func TestTSVRoundTrip(t *testing.T) {
	in := []Statement{{Engine: "vllm", Kind: KindFatal, Family: domain.VerdictConfigError, Phase: domain.PhaseArgs, File: "a.py", Line: 3, Format: "a\tb\\n", Synth: "x\ny"}}
	var b []byte
	w := &sliceWriter{&b}
	if err := WriteTSV(w, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadTSV(&sliceReader{b})
	if err != nil || len(out) != 1 || out[0] != in[0] {
		t.Fatalf("%v %+v", err, out)
	}
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, errEOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

var errEOF = io.EOF

// TestClassifyTable: where a statement lives and how it ends the process
// give its family and phase.
func TestClassifyTable(t *testing.T) {
	cases := []struct {
		engine string
		raw    Raw
		kind   Kind
		family domain.Verdict
		phase  domain.Phase
	}{
		// model construction, not the executor its directory names
		{"vllm", Raw{File: "vllm/model_executor/layers/quantization/awq.py", Func: "create_weights", Call: "raise", Exc: "ValueError"}, KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
		{"vllm", Raw{File: "vllm/v1/executor/multiproc_executor.py", Func: "_init_executor", Call: "raise", Exc: "RuntimeError"}, KindFatal, domain.VerdictEngineDied, ""},
		// llama.cpp's per-batch path: an abort kills a serving engine, a log answers one request
		{"llamacpp", Raw{File: "src/llama-context.cpp", Func: "decode", Call: "GGML_ASSERT"}, KindFatal, domain.VerdictEngineDied, domain.PhaseServing},
		{"llamacpp", Raw{File: "src/llama-context.cpp", Func: "decode", Call: "LLAMA_LOG_ERROR"}, KindRequest, "", domain.PhaseServing},
		// creating the context is still the KV cache's allocation
		{"llamacpp", Raw{File: "src/llama-context.cpp", Func: "llama_init_from_model", Call: "LLAMA_LOG_ERROR"}, KindFatal, domain.VerdictKVCacheInsufficient, domain.PhaseKVAlloc},
	}
	for _, c := range cases {
		s, ok := Classify(Profiles[c.engine], c.raw)
		if !ok || s.Kind != c.kind || s.Family != c.family || s.Phase != c.phase {
			t.Errorf("%s:%s %s: got %s %s %s, want %s %s %s", c.raw.File, c.raw.Func, c.raw.Call, s.Kind, s.Family, s.Phase, c.kind, c.family, c.phase)
		}
	}
}

// TestClassifyParallelSize: a size that must divide by the shard count is
// the parallelism chosen, wherever it is checked.
func TestClassifyParallelSize(t *testing.T) {
	s, _ := Classify(Profiles["tgi"], Raw{File: "server/text_generation_server/models/custom_modeling/bloom_modeling.py", Func: "__init__", Call: "raise", Exc: "ValueError",
		Format: "`num_heads` must be divisible by `num_shards` (got `num_heads`: {self.num_heads} and `num_shards`: {self.num_shards}"})
	if s.Family != domain.VerdictConfigError || s.Phase != domain.PhaseWeights {
		t.Errorf("got %s/%s, want config_error/weights", s.Family, s.Phase)
	}
}

// TestClassifyOneRequest: a logged error naming its request or stream is
// that request's; a raise is not judged by its words.
func TestClassifyOneRequest(t *testing.T) {
	s, _ := Classify(Profiles["lmdeploy"], Raw{File: "lmdeploy/pytorch/engine/mp_engine/zmq_rpc.py", Func: "_stream", Call: "logger.error",
		Format: "ZMQ MP stream task failed: stream_id={}, request_id={}, method={}."})
	if s.Kind != KindRequest {
		t.Errorf("logged per-request error: kind %s, want %s", s.Kind, KindRequest)
	}
	s, _ = Classify(Profiles["sglang"], Raw{File: "python/sglang/srt/layers/quantization/fp8.py", Func: "create_weights", Call: "raise", Exc: "ValueError",
		Format: "Weight input_size_per_partition = {} is not divisible by weight quantization block_k = {}."})
	if s.Kind != KindFatal || s.Family != domain.VerdictConfigError || s.Phase != domain.PhaseWeights {
		t.Errorf("partition not divisible: %s %s/%s, want fatal config_error/weights", s.Kind, s.Family, s.Phase)
	}
}

// TestClassifyLoadFunc: a statement in a function that loads weights is a
// weights failure even where the path names only the engine's core (a worker
// process loading its share of the weights); a more specific path keeps its
// family, and a server's whole-bring-up load_model is not one.
func TestClassifyLoadFunc(t *testing.T) {
	s, _ := Classify(Profiles["vllm"], Raw{File: "vllm/v1/offload/worker.py", Func: "_load_weights", Call: "raise", Exc: "RuntimeError",
		Format: "offload checkpoint did not load all parameters: {missing}"})
	if s.Family != domain.VerdictMissingPayload || s.Phase != domain.PhaseWeights {
		t.Errorf("worker _load_weights: got %s/%s, want missing_payload/weights", s.Family, s.Phase)
	}
	s, _ = Classify(Profiles["vllm"], Raw{File: "vllm/v1/worker/gpu_worker.py", Func: "load_weights", Call: "raise", Exc: "OutOfMemoryError", Format: "out of memory"})
	if s.Family != domain.VerdictOOMWeights {
		t.Errorf("OOM in load_weights: got %s, want %s", s.Family, domain.VerdictOOMWeights)
	}
	s, _ = Classify(Profiles["vllm"], Raw{File: "vllm/distributed/parallel_state.py", Func: "load_state_dict", Call: "raise", Exc: "RuntimeError", Format: "x"})
	if s.Family != domain.VerdictDistributedError {
		t.Errorf("distributed path: got %s, want distributed_error", s.Family)
	}
	s, _ = Classify(Profiles["llamacpp"], Raw{File: "examples/server/server-context.cpp", Func: "load_model", Call: "LOG_ERROR", Format: "unable to load model"})
	if s.Phase == domain.PhaseWeights {
		t.Errorf("server load_model: got phase %s, want none", s.Phase)
	}
}

// TestCLoggerAndStream: class-qualified logger calls with a component tag
// (gufo's Logger::Error("loader", ...)) and std::cerr "<<" chains are read
// as print calls; a chain with no literal text is not.
func TestCLoggerAndStream(t *testing.T) {
	src := []byte(`int RunServe() {
  server::Logger::Error("loader", "event=load_failed kind=" + kind_ + " " + server::Logger::MemoryStatus());
  server::Logger::Info("gpu", diagnostics::DescribeQueuePlan(subcommand, plan));
  std::cerr << "Error: --context must be at least " << (is_tts ? 1 : 32) << '\n';
  std::cerr << parse_err << '\n';
  std::cerr.flush();
}
`)
	got := CExtract("src/cli/serve/serve.cpp", src)
	if len(got) != 2 {
		t.Fatalf("got %d statements: %+v", len(got), got)
	}
	if got[0].Call != "Logger::Error" || got[0].Tag != "loader" || got[0].Format != "event=load_failed kind=%s %s" || got[0].Info {
		t.Errorf("logger: %+v", got[0])
	}
	if got[1].Call != "std::cerr" || got[1].Format != "Error: --context must be at least %s" || got[1].Line != 4 {
		t.Errorf("stream: %+v", got[1])
	}
	p := Profiles["gufo"]
	s, _ := Classify(p, got[0])
	if s.Family != domain.VerdictMissingPayload || s.Phase != domain.PhaseWeights {
		t.Errorf("load_failed classified %s/%s", s.Family, s.Phase)
	}
	if line := Synthesize(p, got[0], s); line != "2026-08-01 12:00:00 [ERROR] [loader] event=load_failed kind=x x" {
		t.Errorf("synth %q", line)
	}
	if s, _ := Classify(p, Raw{File: "src/cli/serve/text_model_runner.cpp", Call: "throw", Exc: "logic_error", Lang: "c"}); s.Family != domain.VerdictEngineDied {
		t.Errorf("a runner under cli/ classified %s/%s", s.Family, s.Phase)
	}
}

// TestShellExtract reads a launcher script as bash runs it: a stderr line
// its block follows with a non-zero exit is fatal with its indented detail;
// a warning, a conditional exit further in, and a printf inside an awk
// program are not.
func TestShellExtract(t *testing.T) {
	src := `#!/bin/bash
need_file() {
  [ -f "$CKPT" ] || {
    echo "svc: no checkpoint at $CKPT" >&2
    echo "  mount it with -v" >&2
    exit 1; }
  echo "svc: WARNING: no overlay at ${CKPT%.bin}.overlay" >&2
  gib=$(awk 'BEGIN{printf "%.1f", 1}')
  echo "svc: size ($(du -h "$CKPT" | cut -f1))"
}
watch() {
  echo "svc: no answer for ${silent}s" >&2
  if [ "$silent" -ge 3 ]; then
    echo "svc: wedged after ${silent}s." >&2
    return 1
  fi
}
echo "svc: waiting for engine on $PORT" \
     "(cold load)"
*) echo "usage: run.sh [a|b]" >&2; exit 2 ;;
`
	got := ShellExtract("deploy/run.sh", []byte(src))
	var lines []string
	for _, r := range got {
		lines = append(lines, fmt.Sprintf("%d %s %s info=%v %q", r.Line, r.Func, r.Call, r.Info, r.Format))
	}
	want := []string{
		`4 need_file echo info=false "svc: no checkpoint at {CKPT}\n  mount it with -v"`,
		`7 need_file echo info=true "svc: WARNING: no overlay at {CKPT}.overlay"`,
		`9 need_file echo info=true "svc: size ({du})"`,
		`12 watch echo info=true "svc: no answer for {silent}s"`,
		`14 watch echo info=false "svc: wedged after {silent}s."`,
		`18  echo info=true "svc: waiting for engine on {PORT} (cold load)"`,
		`20  echo info=false "usage: run.sh [a|b]"`,
	}
	if g, w := strings.Join(lines, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("got\n%s\nwant\n%s", g, w)
	}
	// A launcher refuses its configuration unless its words say otherwise.
	p := Profile{Engine: "svc", Scripts: true}
	for _, c := range []struct {
		format string
		family domain.Verdict
	}{
		{"svc: no checkpoint at {CKPT}", domain.VerdictMissingPayload},
		{"svc: SVC_WAIT_S={limit} expired after {t}s", domain.VerdictTimeout},
		{"svc: the engine exited after {t}s without listening.", domain.VerdictEngineDied},
		{"svc: SVC_CTX={ctx} is past the native 262144", domain.VerdictConfigError},
	} {
		s, _ := Classify(p, Raw{File: "deploy/run.sh", Call: "echo", Exc: "exit", Format: c.format, Lang: "sh"})
		if s.Kind != KindFatal || s.Family != c.family {
			t.Errorf("%q: %s %s, want fatal %s", c.format, s.Kind, s.Family, c.family)
		}
		if syn := Synthesize(p, Raw{Format: c.format, Lang: "sh"}, s); strings.Contains(syn, "{") {
			t.Errorf("%q: hole left in %q", c.format, syn)
		}
	}
}

// TestTRTLLMStatements: TensorRT-LLM's logger lines, its LLM API's argument
// checks, a function serving one request, and a logged error with no text
// of its own (a traceback), which is catalogued where it was raised.
func TestTRTLLMStatements(t *testing.T) {
	src := []byte(`class BaseLLM:
    def __init__(self, **kwargs):
        for key in kwargs:
            raise ValueError(f"{self.__class__.__name__} got invalid argument: {key}")
        if get_device_count() < 2:
            raise RuntimeError(f"Only {get_device_count()} GPUs are available")

    def generate_async(self, inputs):
        raise TypeError(f"The inputs must be type str or list of int, but got {type(inputs)}")


def worker_main():
    try:
        pass
    except Exception as e:
        logger.error(f"Failed to initialize executor on rank {mpi_rank()}: {e}")
        logger.error(traceback.format_exc())
`)
	got := PyExtract("tensorrt_llm/llmapi/llm.py", src)
	if len(got) != 4 {
		t.Fatalf("got %d statements: %+v", len(got), got)
	}
	p := Profiles["trtllm"]
	want := []struct {
		kind   Kind
		family domain.Verdict
		phase  domain.Phase
	}{
		{KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
		{KindFatal, domain.VerdictUnknownFailure, domain.PhaseArgs},
		{KindRequest, "", domain.PhaseServing},
	}
	for i, w := range want {
		if s, _ := Classify(p, got[i]); s.Kind != w.kind || s.Family != w.family || s.Phase != w.phase {
			t.Errorf("%d %q: %s %s/%s, want %s %s/%s", i, got[i].Format, s.Kind, s.Family, s.Phase, w.kind, w.family, w.phase)
		}
	}
	s, _ := Classify(p, got[3])
	if line := Synthesize(p, got[3], s); line != "[08/01/2026-12:00:00] [TRT-LLM] [E] Failed to initialize executor on rank 0: x" {
		t.Errorf("synth %q", line)
	}
}
