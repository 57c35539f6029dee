package domain

// Runbook is what the spec says a verdict means and what an operator tries
// first; the web UI serves it at /verdicts/VERDICT, the alerts' runbook_url.
type Runbook struct {
	Verdict Verdict
	Meaning string   // the spec's definition
	Try     []string // first things to try, most likely first
}

// Runbooks holds one entry per verdict of the spec, in its order.
var Runbooks = []Runbook{
	{VerdictRunning, "Still booting, no failure seen yet.", []string{"Watch the attempt's phase; a boot that stays in one phase far longer than usual is stalled."}},
	{VerdictReady, "Reached ready (the engine's own readiness line, or requests served), no failure since.", nil},
	{VerdictOOMWeights, "Device OOM while loading weights.", []string{"Use more GPUs (tensor parallelism) or a smaller or more quantized checkpoint.", "Free the device: another process may hold memory (nvidia-smi, rocm-smi)."}},
	{VerdictOOMProfile, "Device OOM during the memory-profiling dummy run or the warmup runs before ready.", []string{"Lower the batch the engine profiles with (vLLM --max-num-batched-tokens, --max-num-seqs; SGLang --chunked-prefill-size).", "Leave more memory outside the cache (lower --gpu-memory-utilization / --mem-fraction-static)."}},
	{VerdictOOMKVAlloc, "Device or host OOM while sizing or allocating the KV cache or memory pool.", []string{"Lower the memory share for the cache (--gpu-memory-utilization, --mem-fraction-static) or the context (--max-model-len, --ctx-size).", "Use a smaller KV dtype (--kv-cache-dtype fp8, --cache-type-k/v q8_0)."}},
	{VerdictOOMGraphCapture, "Device OOM while capturing CUDA/HIP graphs.", []string{"Capture fewer or smaller graphs (vLLM --max-seq-len-to-capture, cudagraph capture sizes; SGLang --cuda-graph-max-bs) or run eager.", "Leave more memory outside the cache for the graphs."}},
	{VerdictOOMRuntime, "Device OOM after ready, while serving requests.", []string{"Lower concurrency or batch size (--max-num-seqs, --max-running-requests, --parallel).", "Leave more headroom outside the KV cache."}},
	{VerdictKVCacheInsufficient, "The engine refused the shape: the longest sequence needs more KV cache than is available, or no memory is left for the cache.", []string{"Lower the context (--max-model-len, --context-length, --ctx-size) or raise the memory share for the cache.", "Use a smaller KV dtype or more GPUs."}},
	{VerdictDynamoConstraint, "torch.compile: a dimension marked dynamic was specialized to a constant (Constraints violated).", []string{"Run without torch.compile for this model (vLLM --enforce-eager or a lower compilation level) and report the model's code."}},
	{VerdictCompileError, "Another torch.compile / dynamo / inductor failure.", []string{"Clear the compile cache, then run without compilation to confirm; check the Triton and torch versions the engine build expects."}},
	{VerdictConfigError, "The engine rejected its arguments or configuration.", []string{"Read the decisive line: it names the flag or value. Fix the unit's command line or config file."}},
	{VerdictMissingPayload, "Model files, shards, tokenizer or image missing or corrupt, or in an architecture or format this engine build cannot load.", []string{"Check the path and its mount, the download (sizes, checksums) and the access token for a gated repository.", "Check that this engine build supports the architecture, quantization and file format."}},
	{VerdictDistributedError, "NCCL/RCCL/gloo/torch.distributed initialisation or collective failure.", []string{"Check that every rank started, the interconnect and its environment (NCCL_SOCKET_IFNAME, NCCL_P2P_DISABLE, shared memory size in containers), the master address and port."}},
	{VerdictEngineDied, "The engine's core, worker or scheduler died and no more specific cause was found.", []string{"Read the lines just before the death: an exception of another process, a device error (Xid, illegal memory access), a signal."}},
	{VerdictTimeout, "The unit's start timed out, or no progress for the configured boot timeout.", []string{"Compare with the phase times of earlier boots of this unit; raise TimeoutStartSec if the boot is just slow (cold compile cache, large weights)."}},
	{VerdictStopped, "Stopped by the operator before ready.", nil},
	{VerdictUnknownFailure, "It failed and no rule explains why.", []string{"Read the decisive line and the lines before it; if the cause is clear, write a rule for it (README: rule files)."}},
}

// RunbookOf returns the runbook of verdict v, or false for no verdict of
// the spec.
func RunbookOf(v Verdict) (Runbook, bool) {
	for _, r := range Runbooks {
		if r.Verdict == v {
			return r, true
		}
	}
	return Runbook{}, false
}
