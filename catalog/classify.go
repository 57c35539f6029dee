package catalog

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

// Raw is one print or raise call as an extractor found it, before the table
// gives it a kind, a family and a phase.
type Raw struct {
	File, Func, Call, Exc, Format string
	Line                          int
	Holes                         bool     // the format has holes to fill
	Info                          bool     // an informational call: readiness or milestone only
	Lang                          string   // py, c, go, rs
	Attrs                         []string // slog attribute keys
	Tag                           string   // the component a tagged logger call names (Logger::Error("loader", ...))
}

// Profile is what the catalog knows of one engine: the calls its readiness
// line comes from, as read in its source, and the banner that lets the judge
// detect it.
type Profile struct {
	Engine string
	// Ready are substrings of the engine's own readiness line.
	Ready []string
	// External readiness lines printed by a library the engine runs
	// (uvicorn), which its own tree does not hold.
	External []Statement
	// Banner is a start-up line that names the engine.
	Banner []string
	// Scripts: the engine ships with a launcher script (a container's
	// entrypoint) that prints into the unit's journal; its shell sources
	// are read too.
	Scripts bool
	// Stages are lines the engine prints as it enters a phase, from its
	// source: a statement raised in that phase follows them in a real
	// journal, so the coverage test prints them before it.
	Stages map[domain.Phase][]string
	// LogLine prints a line of the engine's own logger, from its level
	// (%[1]s), the component tag (%[2]s) and the message (%[3]s); "" when
	// the engine has no logger of its own the catalog reads.
	LogLine string
	// Aborted are the lines the engine prints itself once an uncaught
	// exception's std::terminate raises SIGABRT (a signal handler), after
	// terminate's own two lines; empty when it installs no handler.
	Aborted []string
	// Terminate is the line its terminate handler logs before terminate's
	// own two lines, %s the exception's what(); "" when it has none.
	Terminate string
}

var uvicornReady = []Statement{
	{File: "uvicorn/lifespan/on.py", Func: "startup", Call: "logger.info", Kind: KindReady, Format: "Application startup complete.", Synth: "INFO:     Application startup complete."},
	{File: "uvicorn/server.py", Func: "_log_started_message", Call: "logger.info", Kind: KindReady, Format: "Uvicorn running on %s://%s:%d (Press CTRL+C to quit)", Synth: "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)"},
}

// Profiles are the engines catalogs are made for.
var Profiles = map[string]Profile{
	"vllm": {Engine: "vllm", External: uvicornReady, Banner: []string{"INFO 08-01 12:00:00 [api_server.py:1885] vLLM API server version 0.11.0"},
		Stages: map[domain.Phase][]string{
			domain.PhaseInit:    {"INFO 08-01 12:00:00 [parallel_state.py:1165] rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0"},
			domain.PhaseWeights: {"INFO 08-01 12:00:00 [gpu_model_runner.py:2338] Starting to load model /models/Qwen3-8B..."},
			domain.PhaseKVAlloc: {"INFO 08-01 12:00:00 [kv_cache_utils.py:1087] GPU KV cache size: 120,000 tokens"},
		}},
	"sglang": {Engine: "sglang", Ready: []string{"The server is fired up and ready to roll"}, Banner: []string{"[2026-08-01 12:00:00] server_args=ServerArgs(model_path='/models/Qwen3-8B', mem_fraction_static=0.85, tp_size=1)"},
		Stages: map[domain.Phase][]string{
			domain.PhaseInit:         {"[2026-08-01 12:00:00 TP0] Init torch distributed begin."},
			domain.PhaseWeights:      {"[2026-08-01 12:00:00 TP0] Load weight begin. avail mem=78.50 GB"},
			domain.PhaseKVAlloc:      {"[2026-08-01 12:00:00 TP0] Memory pool begin. avail mem=40.00 GB"},
			domain.PhaseGraphCapture: {"[2026-08-01 12:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB"},
		}},
	// The older server's "HTTP server listening" (server_log) came before the
	// model loaded in 2024's llama.cpp; "model loaded" follows the load in
	// every version (ik_llama.cpp's server.cpp sets SERVER_STATE_READY, then
	// logs it).
	"llamacpp": {Engine: "llamacpp", Ready: []string{"server is listening on", "model loaded"}, Banner: []string{"build: 6000 (0a1b2c3d) with cc (GCC) 13.2.0 for x86_64-linux-gnu", "main: build = 6000 (0a1b2c3d)"},
		Stages: map[domain.Phase][]string{
			domain.PhaseInit:    {"ggml_cuda_init: found 1 CUDA devices:"},
			domain.PhaseWeights: {"llama_model_loader: loaded meta data with 30 key-value pairs and 291 tensors from /models/m.gguf (version GGUF V3 (latest))"},
			domain.PhaseKVAlloc: {"llama_context: constructing llama_context"},
			domain.PhaseWarmup:  {"common_init_from_params: warming up the model with an empty run - please wait ... (--no-warmup to disable)"},
			domain.PhaseReady:   {"main: server is listening on http://127.0.0.1:8080 - starting the main loop"},
			domain.PhaseServing: {"srv  update_slots: all slots are idle"},
		}},
	// Ollama's daemon listens before any model is loaded (a request loads
	// one); its runner's "started in" is logged once the runner answers
	// its health check with the model loaded (llm/llama_server.go), which
	// is the readiness the judge takes for a boot of a model.
	"ollama": {Engine: "ollama", Ready: []string{"llama-server started in", "llama runner started in"}, Banner: []string{`time=2026-08-01T12:00:00.000Z level=INFO source=images.go:477 msg="total blobs: 5"`},
		Stages: map[domain.Phase][]string{
			domain.PhaseInit:    {`time=2026-08-01T12:00:00.000Z level=INFO source=types.go:130 msg="inference compute" id=GPU-0 library=cuda compute=8.9 name=CUDA0`},
			domain.PhaseWeights: {`time=2026-08-01T12:00:00.000Z level=INFO source=server.go:1309 msg="waiting for llama runner to start responding"`},
		}},
	"tgi": {Engine: "tgi", Ready: []string{"Connected"}, Banner: []string{`2026-08-01T12:00:00.000000Z  INFO text_generation_launcher: Args { model_id: "/models/Qwen3-8B", max_input_tokens: None }`},
		Stages: map[domain.Phase][]string{
			domain.PhaseWeights: {"2026-08-01T12:00:00.000000Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0"},
		}},
	// gufo logs through its own Logger (src/cli/serve/logging.cpp):
	// "YYYY-MM-DD HH:MM:SS [LEVEL] [component] message", every server message
	// "event=NAME key=value ...". HttpServer::run logs event=listening once the
	// model is loaded and the socket bound (serve.cpp loads, starts the
	// server, then runs it); ModelLoadLog logs event=load_started as a load
	// begins, the first line of every boot that gets past its arguments.
	"gufo": {Engine: "gufo", Ready: []string{"event=listening address="},
		LogLine: "2026-08-01 12:00:00 [%[1]s] [%[2]s] %[3]s",
		// serve.cpp's ReportTerminationReason logs the exception's what()
		// as event=terminated, then the default handler prints terminate's
		// lines; ReportFatalSignal reports the SIGABRT that follows.
		Terminate: "2026-08-01 12:00:00 [ERROR] [server] event=terminated reason=%s",
		Aborted:   []string{"[ERROR] [server] event=fatal_signal signal=6"},
		Banner:    []string{"2026-08-01 12:00:00 [INFO] [gpu] event=queue_budget kind=llm observed=0 budget=8 expected_max=3 cap=2"},
		Stages: map[domain.Phase][]string{
			domain.PhaseWeights: {"2026-08-01 12:00:00 [INFO] [loader] event=load_started kind=text artifact=/models/Qwen3.8-35B-A3B-Q4_K_M.gguf rss_mib=118 host_available_mib=120544",
				"2026-08-01 12:00:00 [INFO] [loader] event=load_phase phase=target_weights rss_mib=118 host_available_mib=120544"},
			// inference_backend.cpp's load: the runner pool creates each
			// session's state (its KV cache) after the weights.
			domain.PhaseKVAlloc: {"2026-08-01 12:00:00 [INFO] [loader] event=load_phase phase=sessions rss_mib=52000 host_available_mib=68000"},
			domain.PhaseReady:   {"2026-08-01 12:00:00 [INFO] [server] event=listening address=http://127.0.0.1:8080 auth=off max_connections=16 max_body_bytes=8388608"},
			domain.PhaseServing: {"2026-08-01 12:00:00 [INFO] [http] request=r1 event=received method=POST path=/v1/chat/completions body_bytes=512"},
		}},
	// halogen-flash-server's public tree holds its container entrypoint
	// (deploy/entrypoint.sh), not the engine: the catalog reads the
	// launcher's own lines, whose first names the release and the mode.
	// The engine's and the front-end's readiness lines are not public.
	"halogen":  {Engine: "halogen", Scripts: true, Banner: []string{"halogen: halogen-flash-server 0.13.8, mode all"}},
	"lmdeploy": {Engine: "lmdeploy", External: uvicornReady, Banner: []string{"[TM][INFO] Turbomind engine created"}},
	// TensorRT-LLM's package prints its version on import (tensorrt_llm/
	// __init__.py); its logger (tensorrt_llm/logger.py) prints "[time]
	// [TRT-LLM] [I] message". The stages are its PyTorch backend's own
	// lines: the weights' size before they load (model_loader.py), the
	// profiling run that sizes the KV cache and its estimate (_util.py),
	// graph capture (model_engine.py) and the memory fraction set once the
	// executor is built; trtllm-serve then starts uvicorn.
	"trtllm": {Engine: "trtllm", External: uvicornReady,
		Banner: []string{"[TensorRT-LLM] TensorRT LLM version: 1.0.0", "[08/01/2026-12:00:00] [TRT-LLM] [I] Using LLM with PyTorch backend"},
		Stages: map[domain.Phase][]string{
			domain.PhaseInit:         {"rank 0 using MpiPoolSession to spawn MPI processes"},
			domain.PhaseWeights:      {"[08/01/2026-12:00:00] [TRT-LLM] [I] Use 15.26 GB for model weights."},
			domain.PhaseProfile:      {"[08/01/2026-12:00:00] [TRT-LLM] [I] Memory used after loading model weights (inside torch) in memory usage profiling: 15.26 GiB"},
			domain.PhaseKVAlloc:      {"[08/01/2026-12:00:00] [TRT-LLM] [I] Estimated max tokens in KV cache : 412160"},
			domain.PhaseGraphCapture: {"[08/01/2026-12:00:00] [TRT-LLM] [I] Creating CUDA graph instances for 11 batch sizes."},
			domain.PhaseWarmup:       {"[08/01/2026-12:00:00] [TRT-LLM] [I] Setting PyTorch memory fraction to 0.95 (75.20 GiB)"},
		}},
	// TabbyAPI (ExLlamaV2/V3 behind it) serves through uvicorn; its own
	// start line names the API it starts (endpoints/server.py).
	"exllama": {Engine: "exllama", External: uvicornReady, Banner: []string{"2026-08-01 12:00:00.000 INFO:     Starting OAI API"},
		Stages: map[domain.Phase][]string{
			domain.PhaseWeights: {"2026-08-01 12:00:00.000 INFO:     Loading model: /models/Qwen3-8B-exl2"},
		}},
}

// Source table: ONE table from where a statement lives (a path fragment) to
// the verdict family and phase it implies; the first match wins. Request-
// level modules answer one request and are no boot failure.
type pathRule struct {
	frag   string
	kind   Kind
	family domain.Verdict
	phase  domain.Phase
}

var pathTable = []pathRule{
	// request-level: answered to one client, the engine lives on
	{"serving_", KindRequest, "", domain.PhaseServing},
	{"/protocol", KindRequest, "", domain.PhaseServing},
	{"chat_utils", KindRequest, "", domain.PhaseServing},
	{"tool_parser", KindRequest, "", domain.PhaseServing},
	{"function_call", KindRequest, "", domain.PhaseServing},
	{"reasoning", KindRequest, "", domain.PhaseServing},
	{"sampling_params", KindRequest, "", domain.PhaseServing},
	{"openai/", KindRequest, "", domain.PhaseServing},
	{"/openai_", KindRequest, "", domain.PhaseServing}, // OpenAI API modules named so (TensorRT-LLM's serve/openai_server.py)
	{"server/routes", KindRequest, "", domain.PhaseServing},
	{"endpoints/", KindRequest, "", domain.PhaseServing}, // HTTP routers (TabbyAPI, LMDeploy's serve)
	{"/parsers/", KindRequest, "", domain.PhaseServing},  // tool-call and reasoning parsers of model output
	{"/renderers/", KindRequest, "", domain.PhaseServing},
	{"router/src/server", KindRequest, "", domain.PhaseServing},
	// arguments and configuration
	{"arg_utils", KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
	{"server_args", KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
	{"cli_args", KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
	{"llm_args", KindFatal, domain.VerdictConfigError, domain.PhaseArgs}, // an LLM API's argument model (TensorRT-LLM's llmapi/llm_args.py)
	{"common/arg", KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
	{"/cli/", KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
	{"envconfig", KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
	{"config", KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
	{"launcher/", KindFatal, domain.VerdictConfigError, domain.PhaseArgs},
	// distributed initialisation
	{"distributed", KindFatal, domain.VerdictDistributedError, domain.PhaseInit},
	{"parallel_state", KindFatal, domain.VerdictDistributedError, domain.PhaseInit},
	{"nccl", KindFatal, domain.VerdictDistributedError, domain.PhaseInit},
	{"communicat", KindFatal, domain.VerdictDistributedError, domain.PhaseInit},
	{"/comm/", KindFatal, domain.VerdictDistributedError, domain.PhaseInit},
	// compilation
	{"compilation", KindFatal, domain.VerdictCompileError, domain.PhaseCompile},
	{"compile", KindFatal, domain.VerdictCompileError, domain.PhaseCompile},
	// graph capture
	{"cuda_graph", KindFatal, domain.VerdictEngineDied, domain.PhaseGraphCapture},
	{"cudagraph", KindFatal, domain.VerdictEngineDied, domain.PhaseGraphCapture},
	{"graph_runner", KindFatal, domain.VerdictEngineDied, domain.PhaseGraphCapture},
	// KV cache sizing and allocation
	{"kv_cache", KindFatal, domain.VerdictKVCacheInsufficient, domain.PhaseKVAlloc},
	{"kv-cache", KindFatal, domain.VerdictKVCacheInsufficient, domain.PhaseKVAlloc},
	{"mem_cache", KindFatal, domain.VerdictKVCacheInsufficient, domain.PhaseKVAlloc},
	{"memory_pool", KindFatal, domain.VerdictKVCacheInsufficient, domain.PhaseKVAlloc},
	{"block_manager", KindFatal, domain.VerdictKVCacheInsufficient, domain.PhaseKVAlloc},
	{"llama-context", KindFatal, domain.VerdictKVCacheInsufficient, domain.PhaseKVAlloc},
	// weights, tokenizer and model files
	{"model_loader", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"weight", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"gguf", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"safetensors", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"tokenizer", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"transformers_utils", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"llama-model", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"llama-vocab", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"llama-adapter", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"models/", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"model/", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	// model construction (vLLM's model_executor, SGLang's and TGI's layers):
	// before "executor", which the directory's name holds
	{"model_executor/", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"srt/layers/", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	{"text_generation_server/layers/", KindFatal, domain.VerdictMissingPayload, domain.PhaseWeights},
	// an LLM API's front layer: the LLM constructor, its model loader and
	// MPI session, run while the arguments are read (TensorRT-LLM's llmapi/)
	{"llmapi/", KindFatal, domain.VerdictUnknownFailure, domain.PhaseArgs},
	// device bring-up
	{"platforms", KindFatal, domain.VerdictUnknownFailure, domain.PhaseInit},
	{"discover/", KindFatal, domain.VerdictUnknownFailure, domain.PhaseInit},
	{"ggml-cuda", KindFatal, domain.VerdictUnknownFailure, ""},
	// an engine's own HIP (ROCm) runtime layer: streams, pinned host memory,
	// transfers; a failure there that escapes kills the process
	{"/hip/", KindFatal, domain.VerdictEngineDied, ""},
	// the engine's core, executor and workers
	{"executor", KindFatal, domain.VerdictEngineDied, ""},
	{"worker", KindFatal, domain.VerdictEngineDied, ""},
	{"engine", KindFatal, domain.VerdictEngineDied, ""},
	{"scheduler", KindFatal, domain.VerdictEngineDied, ""},
	{"runner", KindFatal, domain.VerdictEngineDied, ""},
}

// serverRoles: names a server's own files take for the runtime behind
// it, beyond the engine roles of the path table: its inference backend
// (gufo's inference_backend.cpp) holds the model runners and their load.
// Read only in a server under a CLI: elsewhere "backend" names a library's
// device or attention backends.
var serverRoles = []string{"backend"}

// runtimeFile and runtimeFunc: llama.cpp's per-batch path (the context's
// decode and encode, the KV cache's slot bookkeeping, session state, the
// sampler), which runs only once the server serves.
var (
	runtimeFile = regexp.MustCompile(`llama-(?:context|kv-cache|kv-cells|memory|batch|sampling|graph)`)
	runtimeFunc = regexp.MustCompile(`^(?:llama_)?(?:decode|encode|process_ubatch|state_\w+|opt_\w+|seq_\w+|find_slot|set_input\w*|get_logits\w*|get_embeddings\w*|memory_update|update|apply_ubatch|n_pos_per_embd|output_reserve|graph_compute|sample\w*|accept\w*)$`)
)

// parallelSize: a statement that a size must divide by the parallel degree,
// or that a tensor-parallel partition of a weight does not divide.
var parallelSize = regexp.MustCompile("(?i)divisible by .{0,40}(?:num_shards|world_size|tp_size|tensor_parallel|tensor parallel|shards)|(?:per_partition|partition_size).{0,60}divisible")

// loadFunc: a function whose name says it loads the model's weights,
// checkpoint or state dict. A statement there fails while weights load,
// wherever its file lives (a worker process that loads its own share of the
// weights, an engine's loader helper), unless the path named a more specific
// subsystem than the engine's core. A bare load_model is not one: servers
// name their whole bring-up so (llama.cpp's server checks its arguments
// there).
var loadFunc = regexp.MustCompile(`(?i)^_*load_(?:weights?|model_weights|checkpoint|state_dict|tensors)$`)

// modelForward: a model definition's forward pass. Before ready it runs only
// in the engine's dummy runs (memory profiling, warmup), never while the
// weights load: a statement there fails in profile (the frame table of
// rules/generic.yaml reads its traceback frames so).
var (
	modelDefinition = regexp.MustCompile(`(?:^|/)(?:model_executor|srt|text_generation_server|pytorch|transformers)/models/`)
	modelForward    = regexp.MustCompile(`^_?forward\w*$`)
)

// oneRequest: a statement naming the request, stream or session it is
// about, or saying that a request failed.
var oneRequest = regexp.MustCompile(`(?i)\b(?:request_id|req_id|stream_id|session_id|rid)\b|\b(?:request|req|stream|session) (?:\{|%|x\b|0\b)|\brequests? failed\b`)

// requestFunc: a function that serves one request: generates for it,
// submits or enqueues it, checks its arguments or sampling parameters, or
// deduces its token budget. What it raises fails that request; the engine
// serves on.
var requestFunc = regexp.MustCompile(`^_*(?:a?generate(?:_async)?|submit|enqueue_requests?|check_arguments|prepare_sampling_params|deduce_max_tokens)$`)

// configFunc and argumentExc: a function that checks, validates, verifies,
// parses or builds configuration (by its name, as rules/generic.yaml's
// config_exception reads the frames), and the exceptions that refuse a value
// or a feature. Raised there, or in a constructor, by a module that runs
// while the arguments are read, the arguments or the configuration were
// refused.
var (
	configFunc  = regexp.MustCompile(`(?i)^(?:check|validate|verify|parse)|config`)
	argumentExc = regexp.MustCompile(`^(?:ValueError|TypeError|KeyError|AssertionError|ValidationError|NotImplementedError)$`)
)

// transferPath: KV transfer between nodes (disaggregated prefill) and the
// hierarchical cache's storage tiers, which move pages while serving.
var transferPath = regexp.MustCompile(`kv_transfer/|mem_cache/storage/|hiradix|hicache|/disaggregation/`)

// wordingTable: what a fatal statement's wording says it failed at, read
// when its file told no more than the command line (config_error) or nothing
// (unknown_failure): a program whose main, CLI and server share one file (a
// C++ engine's serve.cpp) reports its load, its parallel group and its
// listener from there. The first match wins.
var wordingTable = []struct {
	re     *regexp.Regexp
	family domain.Verdict
	phase  domain.Phase
}{
	// the model could not be loaded, or its service enabled once loaded, in
	// a CLI's own words ("Error loading model '/m': ...") or its loader's
	// failure event
	{regexp.MustCompile(`^Error (?:loading|enabling) |\bload_failed\b`), domain.VerdictMissingPayload, domain.PhaseWeights},
	// the tensor-parallel group's communicator, control channel or peer
	{regexp.MustCompile(`(?i)\bcommunicator\b|\bcontrol channel\b|\btp\d*_(?:pair|worker|peer)`), domain.VerdictDistributedError, domain.PhaseInit},
	// the process terminated on an exception nothing caught
	{regexp.MustCompile(`(?i)\bterminated reason=|\buncaught exception\b`), domain.VerdictEngineDied, ""},
	// fewer KV or state (Mamba) cache blocks than the sequences need: the
	// memory left for the cache, not the flags alone
	{regexp.MustCompile(`exceeds (?:the )?available (?:\w+ )?cache blocks|No available memory for the cache blocks`), domain.VerdictKVCacheInsufficient, domain.PhaseKVAlloc},
	// the HTTP listener could not be set up
	{regexp.MustCompile(`(?i)\berror starting (?:the )?http server\b|\bbind\(\) failed\b|\baddress already in use\b`), domain.VerdictConfigError, domain.PhaseStart},
}

// launcherWording: what a launcher script's fatal line says went wrong, when
// it is not its configuration. The first match wins.
var launcherWording = []struct {
	re     *regexp.Regexp
	family domain.Verdict
	phase  domain.Phase
}{
	{regexp.MustCompile(`(?i)\bexpired\b|\btimed? ?out\b|\bnever answered\b`), domain.VerdictTimeout, ""},
	{regexp.MustCompile(`(?i)\b(?:engine|server|worker|component|process)\b.{0,40}\b(?:exited|died|crashed|killed)\b|\banswered nothing\b`), domain.VerdictEngineDied, ""},
	{regexp.MustCompile(`(?i)\bno [\w.-]+ (?:at|in) |\bdoes not exist\b|\bmissing\b|\bnot found\b|\bdownload failed\b`), domain.VerdictMissingPayload, ""},
}

// Aborts reports whether a C/C++ call ends the process by abort(): the
// ggml assertion macros, and a throw nobody catches (std::terminate).
func Aborts(call string) bool {
	switch call {
	case "GGML_ASSERT", "GGML_ABORT", "throw", "abort":
		return true
	}
	return false
}

// excTable: an exception type overrides the family the path gave (and the
// phase, when it names one).
var excTable = []struct {
	re     *regexp.Regexp
	family domain.Verdict
	phase  domain.Phase
}{
	{regexp.MustCompile(`OutOfMemory|MemoryError|bad_alloc`), "oom", ""},
	{regexp.MustCompile(`^(FileNotFoundError|EntryNotFoundError|RepositoryNotFoundError|GatedRepoError|LocalEntryNotFoundError)$`), domain.VerdictMissingPayload, domain.PhaseWeights},
	{regexp.MustCompile(`^(ArgumentError|ArgumentTypeError|invalid_argument)$`), domain.VerdictConfigError, domain.PhaseArgs},
	{regexp.MustCompile(`DistBackendError|DistNetworkError|NCCL`), domain.VerdictDistributedError, domain.PhaseInit},
	{regexp.MustCompile(`BackendCompilerFailed|InductorError|TorchRuntimeError|Unsupported$`), domain.VerdictCompileError, domain.PhaseCompile},
	{regexp.MustCompile(`EngineDeadError|EngineGenerateError|WorkerError`), domain.VerdictEngineDied, ""},
}

// oomByPhase names the OOM verdict of each phase.
var oomByPhase = map[domain.Phase]domain.Verdict{
	domain.PhaseWeights: domain.VerdictOOMWeights, domain.PhaseKVAlloc: domain.VerdictOOMKVAlloc,
	domain.PhaseGraphCapture: domain.VerdictOOMGraphCapture, domain.PhaseProfile: domain.VerdictOOMProfile,
	domain.PhaseServing: domain.VerdictOOMRuntime,
}

// markerTable: milestone wording of informational calls and the phase each
// proves. A milestone never proves readiness.
var markerTable = []struct {
	re    *regexp.Regexp
	phase domain.Phase
}{
	{regexp.MustCompile(`(?i)load(ing|ed)? (the )?(model )?weights|loading model|model loading took|load_tensors|loading safetensors`), domain.PhaseWeights},
	{regexp.MustCompile(`(?i)cuda ?graph|capturing|graph capture`), domain.PhaseGraphCapture},
	{regexp.MustCompile(`(?i)kv cache|memory pool|#tokens|kv_cache|kv buffer`), domain.PhaseKVAlloc},
	{regexp.MustCompile(`(?i)warm(ing)? ?up`), domain.PhaseWarmup},
	{regexp.MustCompile(`(?i)profil`), domain.PhaseProfile},
	{regexp.MustCompile(`(?i)compil|dynamo|inductor`), domain.PhaseCompile},
	{regexp.MustCompile(`(?i)nccl|init_process_group|world_size|distributed`), domain.PhaseInit},
	{regexp.MustCompile(`(?i)starting|started|listening|route|api server|available routes`), domain.PhaseStart},
}

// Classify gives a raw statement its kind, family and phase from the tables,
// or reports it is not catalogued (an informational call that is neither
// readiness nor a milestone).
func Classify(p Profile, r Raw) (Statement, bool) {
	s := Statement{Engine: p.Engine, File: r.File, Line: r.Line, Func: r.Func, Call: r.Call, Exc: r.Exc, Format: r.Format}
	for _, rd := range p.Ready {
		if strings.Contains(r.Format, rd) {
			s.Kind = KindReady
			s.Phase = domain.PhaseReady
			return s, true
		}
	}
	if r.Info {
		for _, m := range markerTable {
			if m.re.MatchString(r.Format) {
				s.Kind, s.Phase = KindMarker, m.phase
				return s, true
			}
		}
		return s, false
	}
	s.Kind, s.Family = KindFatal, domain.VerdictUnknownFailure
	lp := strings.ToLower(r.File)
	for _, pr := range pathTable {
		if strings.Contains(lp, pr.frag) {
			s.Kind, s.Family, s.Phase = pr.kind, pr.family, pr.phase
			if pr.frag == "/cli/" {
				// A program whose server lives under its CLI (gufo's
				// src/cli/serve/): a file there whose own name names a
				// runtime role (text_model_runner.cpp) is that role, not
				// the command line.
				base := path.Base(lp)
				for _, role := range pathTable {
					if role.kind == KindFatal && role.family == domain.VerdictEngineDied && strings.Contains(base, role.frag) {
						s.Kind, s.Family, s.Phase = role.kind, role.family, role.phase
						break
					}
				}
				for _, role := range serverRoles {
					if strings.Contains(base, role) {
						s.Kind, s.Family, s.Phase = KindFatal, domain.VerdictEngineDied, ""
						break
					}
				}
			}
			break
		}
	}
	if s.Kind == KindFatal && s.Phase == domain.PhaseWeights && modelForward.MatchString(r.Func) && modelDefinition.MatchString(lp) {
		s.Phase = domain.PhaseProfile
	}
	if s.Kind == KindFatal && (s.Family == domain.VerdictEngineDied || s.Family == domain.VerdictUnknownFailure) && loadFunc.MatchString(r.Func) {
		s.Family, s.Phase = domain.VerdictMissingPayload, domain.PhaseWeights
	}
	if s.Kind == KindFatal && (s.Family == domain.VerdictConfigError || s.Family == domain.VerdictUnknownFailure) {
		for _, w := range wordingTable {
			if w.re.MatchString(r.Format) {
				s.Family, s.Phase = w.family, w.phase
				break
			}
		}
	}
	if s.Kind == KindFatal && r.Lang == "sh" && s.Family == domain.VerdictUnknownFailure {
		// A launcher script refuses its configuration before it starts the
		// engine, unless its words say the engine died, a wait for it ran
		// out, or a file it needs is not there.
		s.Family, s.Phase = domain.VerdictConfigError, domain.PhaseArgs
		for _, w := range launcherWording {
			if w.re.MatchString(r.Format) {
				s.Family, s.Phase = w.family, w.phase
				break
			}
		}
	}
	if s.Kind == KindFatal && parallelSize.MatchString(r.Format) {
		// A size that must divide by the shard or rank count: the
		// parallelism the operator chose does not fit the model.
		s.Family = domain.VerdictConfigError
	}
	if s.Kind == KindFatal && requestFunc.MatchString(r.Func) {
		s.Kind, s.Family, s.Phase = KindRequest, "", domain.PhaseServing
		return s, true
	}
	if s.Kind == KindFatal && s.Family == domain.VerdictUnknownFailure && s.Phase == domain.PhaseArgs && argumentExc.MatchString(r.Exc) &&
		(configFunc.MatchString(r.Func) || r.Func == "__init__" || r.Func == "__post_init__") {
		s.Family, s.Phase = domain.VerdictConfigError, domain.PhaseArgs
	}
	if strings.HasPrefix(r.Call, "logger.") && oneRequest.MatchString(r.Format) {
		// A logged error that names the request, stream or session it
		// concerns: that one failed, the engine goes on.
		s.Kind, s.Family, s.Phase = KindRequest, "", domain.PhaseServing
		return s, true
	}
	if transferPath.MatchString(lp) && strings.HasPrefix(r.Call, "logger.") {
		// A KV page moved to or from another node or a storage tier
		// failed: logged for that request or page, the engine goes on.
		s.Kind, s.Family, s.Phase = KindRequest, "", domain.PhaseServing
		return s, true
	}
	if runtimeFile.MatchString(lp) && runtimeFunc.MatchString(r.Func) {
		// Run per batch or per request once the server serves: an abort
		// there kills a serving engine; an error log answers one request.
		s.Kind, s.Family, s.Phase = KindRequest, "", domain.PhaseServing
		if Aborts(r.Call) {
			s.Kind, s.Family = KindFatal, domain.VerdictEngineDied
		}
		return s, true
	}
	if r.Call == "throw" && s.Kind == KindFatal && s.Family == domain.VerdictUnknownFailure {
		// A C++ exception nothing catches ends in std::terminate and an
		// abort: the process died, unless its type names more (excTable).
		s.Family = domain.VerdictEngineDied
	}
	for _, e := range excTable {
		if r.Exc != "" && e.re.MatchString(r.Exc) {
			if s.Kind == KindRequest && e.family != "oom" {
				break
			}
			s.Kind = KindFatal
			if e.phase != "" {
				s.Phase = e.phase
			}
			s.Family = e.family
			if e.family == "oom" {
				s.Family = oomByPhase[s.Phase]
				if s.Family == "" {
					s.Family = domain.VerdictOOMProfile
				}
			}
			break
		}
	}
	return s, true
}

// Extract reads one source file, by its extension, into catalogued
// statements of the engine.
func Extract(p Profile, file string, src []byte) []Statement {
	var raws []Raw
	switch path.Ext(file) {
	case ".py":
		raws = PyExtract(file, src)
	case ".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh", ".m", ".mm":
		raws = CExtract(file, src)
	case ".go":
		raws = GoExtract(file, src)
	case ".rs":
		raws = RustExtract(file, src)
	case ".sh", ".bash":
		raws = ShellExtract(file, src)
	}
	var out []Statement
	for _, r := range raws {
		s, ok := Classify(p, r)
		if !ok {
			continue
		}
		s.Synth = Synthesize(p, r, s)
		out = append(out, s)
	}
	return out
}

// holeRe finds the holes of printf, str.format/f-string and Rust formats.
var holeRe = regexp.MustCompile(`%\([A-Za-z_]\w*\)[-#0 +]*\d*(?:\.\d+)?[sdrfgixXu]|%[-#0 +]*\d*(?:\.\d+)?(?:l|ll|z|h|j|PRI\w+)?[sdrfgixXuepqwvT%]|\{[^{}]{0,80}\}`)

// Plausible values by what a hole is named, so a synthesized line reads like
// a real one without inventing a cause the statement does not state.
var holeValues = []struct {
	re *regexp.Regexp
	v  string
}{
	{regexp.MustCompile(`(?i)path|file|dir|model|repo`), "/models/Qwen3-8B"},
	{regexp.MustCompile(`(?i)gib|gb|mem|bytes|size_mb`), "12.50"},
	{regexp.MustCompile(`(?i)port`), "8000"},
	{regexp.MustCompile(`(?i)host|addr`), "0.0.0.0"},
	{regexp.MustCompile(`(?i)dtype|type`), "bfloat16"},
	{regexp.MustCompile(`(?i)arch|name`), "Qwen3ForCausalLM"},
	{regexp.MustCompile(`(?i)device`), "cuda:0"},
	{regexp.MustCompile(`(?i)rank|idx|index|id$`), "0"},
	{regexp.MustCompile(`(?i)len|size|num|count|tokens|blocks|n_`), "4096"},
}

func fillHoles(format, fn string) string {
	first := true
	return holeRe.ReplaceAllStringFunc(format, func(h string) string {
		if h == "%%" {
			return "%"
		}
		isFunc := first && (strings.HasSuffix(h, "s") && strings.HasPrefix(h, "%"))
		first = false
		if isFunc && fn != "" && strings.HasPrefix(format, h) {
			return fn // llama.cpp's "%s: ..." with __func__
		}
		name := strings.Trim(h, "{}%()")
		for _, hv := range holeValues {
			if hv.re.MatchString(name) {
				return hv.v
			}
		}
		switch h[len(h)-1] {
		case 'd', 'i', 'u', 'x', 'X':
			return "2"
		case 'f', 'g', 'e':
			return "1.00"
		}
		if strings.HasPrefix(h, "{") && name == "" {
			return "2"
		}
		return "x"
	})
}

// Synthesize prints the line a statement writes, in the engine's log format.
func Synthesize(p Profile, r Raw, s Statement) string {
	msg := strings.TrimRight(fillHoles(r.Format, r.Func), "\n")
	base := path.Base(r.File)
	switch r.Lang {
	case "sh":
		return fillShell(r.Format)
	case "py":
		if r.Call == "raise" {
			return fmt.Sprintf("Traceback (most recent call last):\n  File \"/usr/lib/python3.12/site-packages/%s\", line %d, in %s\n    raise %s(...)\n%s: %s",
				r.File, r.Line, orModule(r.Func), r.Exc, r.Exc, msg)
		}
		level := strings.ToUpper(strings.TrimPrefix(r.Call, "logger."))
		if level == "EXCEPTION" || level == "FATAL" {
			level = "ERROR"
		}
		switch p.Engine {
		case "sglang":
			return "[2026-08-01 12:00:00] " + msg
		case "lmdeploy":
			return fmt.Sprintf("2026-08-01 12:00:00,000 - lmdeploy - %s - %s:%d - %s", level, base, r.Line, msg)
		case "tgi":
			return fmt.Sprintf("2026-08-01T12:00:00.000000Z %s text_generation_launcher: %s", level, msg)
		case "trtllm":
			// tensorrt_llm/logger.py: "[%m/%d/%Y-%H:%M:%S] [TRT-LLM] [E] msg".
			letter := map[string]string{"ERROR": "E", "CRITICAL": "F", "WARNING": "W", "INFO": "I"}[level]
			if letter == "" {
				letter = "E"
			}
			return fmt.Sprintf("[08/01/2026-12:00:00] [TRT-LLM] [%s] %s", letter, msg)
		case "exllama":
			// TabbyAPI's loguru formatter (common/logger.py): time,
			// "LEVEL:" padded to nine columns, the message.
			return fmt.Sprintf("2026-08-01 12:00:00.000 %s:%s%s", level, strings.Repeat(" ", max(1, 9-len(level))), msg)
		}
		return fmt.Sprintf("%s 08-01 12:00:00 [%s:%d] %s", level, base, r.Line, msg)
	case "c":
		if lc, ok := cLogCalls[r.Call]; ok && p.LogLine != "" {
			return fmt.Sprintf(p.LogLine, lc.level, r.Tag, msg)
		}
		switch r.Call {
		case "GGML_ABORT", "GGML_ASSERT":
			return fmt.Sprintf("/app/%s:%d: %s", r.File, r.Line, msg)
		case "std::cerr":
			return msg
		case "throw":
			if len(p.Aborted) > 0 {
				var b strings.Builder
				if p.Terminate != "" {
					fmt.Fprintf(&b, p.Terminate+"\n", msg)
				}
				fmt.Fprintf(&b, "terminate called after throwing an instance of 'std::%s'\n  what():  %s", r.Exc, msg)
				for _, l := range p.Aborted {
					b.WriteString("\n" + l)
				}
				return b.String()
			}
			return fmt.Sprintf("terminate called after throwing an instance of 'std::%s'\n  what():  %s", r.Exc, msg)
		case "LOG_INFO", "LOG_ERROR", "LOG_WARNING", "LOG_VERBOSE":
			// The older llama.cpp server's server_log (ik_llama.cpp's
			// today), text format: "%4s [%24s] %s |" and its fields.
			level := map[string]string{"LOG_INFO": "INFO", "LOG_ERROR": "ERR", "LOG_WARNING": "WARN", "LOG_VERBOSE": "VERB"}[r.Call]
			return fmt.Sprintf("%4s [%24s] %s | tid=\"140213351337984\" timestamp=1754049600", level, r.Func, msg)
		}
		return msg
	case "go":
		level := "ERROR"
		if r.Info {
			level = "INFO"
		}
		if r.Call == "fmt.Errorf" {
			return "Error: " + msg
		}
		if strings.HasPrefix(r.Call, "log.") {
			return "2026/08/01 12:00:00 " + msg
		}
		var attrs strings.Builder
		for _, a := range r.Attrs {
			attrs.WriteString(" " + a + "=" + fillHoles("{"+a+"}", ""))
		}
		return fmt.Sprintf("time=2026-08-01T12:00:00.000Z level=%s source=%s:%d msg=%q%s", level, base, r.Line, msg, attrs.String())
	case "rs":
		if r.Call == "panic!" || r.Call == "unreachable!" {
			return fmt.Sprintf("thread 'main' panicked at %s:%d:5:\n%s", r.File, r.Line, msg)
		}
		level := "ERROR"
		if r.Info {
			level = "INFO"
		}
		return fmt.Sprintf("2026-08-01T12:00:00.000000Z %s text_generation_launcher: %s", level, msg)
	}
	return msg
}

func orModule(fn string) string {
	if fn == "" {
		return "<module>"
	}
	return fn
}
