package tracker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pastedArgs are the argument lines engines print at start, as printed
// (vLLM 0.8.1's argparse Namespace, with the <...> reprs of an enum and a
// function, from a public vLLM discussion; vLLM 0.10's dict of non-default
// arguments; SGLang's ServerArgs dataclass repr), each with the shape it
// states.
var pastedArgs = []struct {
	name, unit, line, fail  string
	maxModelLen, maxNumSeqs int64
}{
	{"vLLM args: Namespace(...)", "vllm.service",
		"INFO 03-23 05:00:57 [api_server.py:978] args: Namespace(subparser='serve', model_tag='TIGER-Lab/VLM2Vec-Full', config='', host='0.0.0.0', port=8070, uvicorn_log_level='info', allow_credentials=False, allowed_origins=['*'], allowed_methods=['*'], allowed_headers=['*'], api_key=None, lora_modules=None, prompt_adapters=None, chat_template=None, chat_template_content_format='auto', response_role='assistant', ssl_keyfile=None, ssl_certfile=None, ssl_ca_certs=None, enable_ssl_refresh=False, ssl_cert_reqs=0, root_path=None, middleware=[], return_tokens_as_token_ids=False, disable_frontend_multiprocessing=False, enable_request_id_headers=False, enable_auto_tool_choice=False, tool_call_parser=None, tool_parser_plugin='', model='TIGER-Lab/VLM2Vec-Full', task='auto', tokenizer=None, hf_config_path=None, skip_tokenizer_init=False, revision=None, code_revision=None, tokenizer_revision=None, tokenizer_mode='auto', trust_remote_code=True, allowed_local_media_path=None, download_dir=None, load_format='auto', config_format=<ConfigFormat.AUTO: 'auto'>, dtype='auto', kv_cache_dtype='auto', max_model_len=2048, guided_decoding_backend='xgrammar', logits_processor_pattern=None, model_impl='auto', distributed_executor_backend=None, pipeline_parallel_size=1, tensor_parallel_size=1, enable_expert_parallel=False, max_parallel_loading_workers=None, ray_workers_use_nsight=False, block_size=None, enable_prefix_caching=None, disable_sliding_window=False, use_v2_block_manager=True, num_lookahead_slots=0, seed=None, swap_space=4, cpu_offload_gb=0, gpu_memory_utilization=0.9, num_gpu_blocks_override=None, max_num_batched_tokens=2048, max_num_partial_prefills=1, max_long_partial_prefills=1, long_prefill_token_threshold=0, max_num_seqs=8, max_logprobs=20, disable_log_stats=False, quantization=None, served_model_name=None, dispatch_function=<function ServeSubcommand.cmd at 0x7f81cc92dee0>)",
		"ERROR 03-23 05:03:05 [core.py:390] ValueError: To serve at least one request with the models's max seq len (2048), (36.00 GiB KV cache is needed, which is larger than the available KV cache memory (6.94 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
		2048, 8},
	{"vLLM non-default args: {...}", "vllm.service",
		"(APIServer pid=2239) INFO 03-23 05:00:57 [utils.py:328] non-default args: {'model_tag': 'Qwen/Qwen3-8B', 'model': 'Qwen/Qwen3-8B', 'max_model_len': 262144, 'max_num_seqs': 4, 'gpu_memory_utilization': 0.92}",
		"(EngineCore_DP0 pid=2300) ValueError: To serve at least one request with the models's max seq len (262144), (36.00 GiB KV cache is needed, which is larger than the available KV cache memory (6.94 GiB). Based on the available memory, the estimated maximum model length is 50512. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
		262144, 4},
	{"SGLang server_args=ServerArgs(...)", "sglang.service",
		"[2025-03-23 05:00:57] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tokenizer_path='Qwen/Qwen3-8B', tokenizer_mode='auto', load_format='auto', trust_remote_code=True, dtype='auto', kv_cache_dtype='auto', quantization=None, context_length=131072, device='cuda', served_model_name='Qwen/Qwen3-8B', mem_fraction_static=0.88, max_running_requests=16, max_total_tokens=None, tp_size=1)",
		"[2025-03-23 05:03:05] Scheduler hit an exception: RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
		131072, 16},
}

// TestPastedArgsGiveTheShape: the arguments an engine prints at start give
// the attempt's max_model_len and max_num_seqs when the operator pastes
// journalctl's short output (or short-iso, or the bare messages).
func TestPastedArgsGiveTheShape(t *testing.T) {
	for _, c := range pastedArgs {
		for format, prefix := range map[string]string{
			"short":     "Mar 23 %s gpu1 engine[2239]: ",
			"short-iso": "2025-03-23T%s+0000 gpu1 engine[2239]: ",
			"cat":       "",
		} {
			t.Run(c.name+"/"+format, func(t *testing.T) {
				at := func(clock string) string {
					if prefix == "" {
						return ""
					}
					return strings.Replace(prefix, "%s", clock, 1)
				}
				lines := []string{c.line, c.fail}
				if prefix != "" {
					sd := strings.Replace(strings.Replace(prefix, "engine[2239]", "systemd[1]", 1), "%s", "05:00:50", 1)
					lines = []string{sd + "Started " + c.unit + ".", at("05:00:57") + c.line, at("05:03:05") + c.fail,
						strings.Replace(sd, "05:00:50", "05:03:06", 1) + c.unit + ": Main process exited, code=exited, status=1/FAILURE"}
				}
				path := filepath.Join(t.TempDir(), "paste.txt")
				if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				as := analyzeFile(t, path)
				if len(as) != 1 {
					t.Fatalf("%d attempts, want 1", len(as))
				}
				s := as[0].Shape
				if n, ok := s.Int("max_model_len"); !ok || n != c.maxModelLen {
					t.Errorf("max_model_len = %v, want %d (shape %v)", s["max_model_len"], c.maxModelLen, s)
				}
				if n, ok := s.Int("max_num_seqs"); !ok || n != c.maxNumSeqs {
					t.Errorf("max_num_seqs = %v, want %d (shape %v)", s["max_num_seqs"], c.maxNumSeqs, s)
				}
				if !as[0].Verdict.IsFailure() {
					t.Errorf("verdict %s", as[0].Verdict)
				}
			})
		}
	}
}
