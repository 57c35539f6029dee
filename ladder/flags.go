package ladder

import (
	"strconv"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

// engineFlag is how an engine takes one shape key on its command line.
type engineFlag struct {
	key  string
	flag string
	// value turns the shape's value into the flag's ("" drops the flag);
	// nil uses it as it is.
	value func(v string, s domain.Shape) string
}

// engineFlags lists, per engine family, the flags that set the shape keys,
// in the order operators write them.
var engineFlags = map[string][]engineFlag{
	"vllm": {
		{key: domain.ShapeMaxNumSeqs, flag: "--max-num-seqs"},
		{key: domain.ShapeMaxModelLen, flag: "--max-model-len"},
		{key: domain.ShapeKVCacheDtype, flag: "--kv-cache-dtype", value: torchKVDtype},
		{key: domain.ShapeKVCacheMemoryBytes, flag: "--kv-cache-memory-bytes"},
		{key: domain.ShapeGPUMemoryUtilization, flag: "--gpu-memory-utilization"},
		{key: domain.ShapeMaxNumBatchedTokens, flag: "--max-num-batched-tokens"},
		{key: domain.ShapeTensorParallelSize, flag: "--tensor-parallel-size"},
		{key: domain.ShapeEnforceEager, flag: "--enforce-eager", value: switchOn},
	},
	"sglang": {
		{key: domain.ShapeMaxNumSeqs, flag: "--max-running-requests"},
		{key: domain.ShapeMaxModelLen, flag: "--context-length"},
		{key: domain.ShapeKVCacheDtype, flag: "--kv-cache-dtype", value: func(v string, s domain.Shape) string {
			// SGLang names the fp8 formats; vLLM's plain fp8 is e4m3.
			if v == "fp8" {
				return "fp8_e4m3"
			}
			return torchKVDtype(v, s)
		}},
		{key: domain.ShapeGPUMemoryUtilization, flag: "--mem-fraction-static"},
		{key: domain.ShapeMaxNumBatchedTokens, flag: "--chunked-prefill-size"},
		{key: domain.ShapeTensorParallelSize, flag: "--tp-size"},
		{key: domain.ShapeEnforceEager, flag: "--disable-cuda-graph", value: switchOn},
	},
	"llamacpp": {
		{key: domain.ShapeMaxNumSeqs, flag: "--parallel"},
		// max_model_len is the context of one slot (n_ctx_seq); llama-server
		// divides --ctx-size among its --parallel slots.
		{key: domain.ShapeMaxModelLen, flag: "--ctx-size", value: func(v string, s domain.Shape) string {
			n, ok := s.Int(domain.ShapeMaxModelLen)
			slots, okS := s.Int(domain.ShapeMaxNumSeqs)
			if !ok || !okS || slots < 1 {
				return v
			}
			return strconv.FormatInt(n*slots, 10)
		}},
		{key: domain.ShapeKVCacheDtype, flag: "--cache-type-k", value: ggmlKVDtype},
		{key: domain.ShapeKVCacheDtype, flag: "--cache-type-v", value: ggmlKVDtype},
	},
}

// EngineFlags is the shape s written as the command-line flags of engine
// (an engine family: vllm, sglang, llamacpp), the way one would start the
// next rung: "--max-num-seqs 5 --max-model-len 233472 --kv-cache-dtype
// fp8". Keys the engine takes no flag for are left out; "" for an engine
// whose flags are not known.
func EngineFlags(engine string, s domain.Shape) string {
	var out []string
	for _, f := range engineFlags[engine] {
		if _, ok := s[f.key]; !ok {
			continue
		}
		v := s.String(f.key)
		if f.value != nil {
			v = f.value(v, s)
		}
		switch {
		case v == "":
		case v == switchFlag:
			out = append(out, f.flag)
		default:
			out = append(out, f.flag+" "+v)
		}
	}
	return strings.Join(out, " ")
}

// switchFlag marks a flag that takes no value.
const switchFlag = "\x00on"

// switchOn turns a true boolean key into a flag without value.
func switchOn(v string, _ domain.Shape) string {
	if b, err := strconv.ParseBool(v); err == nil && b {
		return switchFlag
	}
	return ""
}

// torchKVDtype is a KV dtype as vLLM and SGLang take it: a 16-bit dtype is
// "auto" (the model's own), fp8 formats pass as they are.
func torchKVDtype(v string, _ domain.Shape) string {
	switch strings.ToLower(v) {
	case "bf16", "bfloat16", "fp16", "float16", "half", "auto":
		return "auto"
	}
	return v
}

// ggmlKVDtype is a KV dtype as llama.cpp's --cache-type-k/-v take it; ""
// for fp8, which llama.cpp has no cache type for.
func ggmlKVDtype(v string, _ domain.Shape) string {
	if strings.HasPrefix(strings.ToLower(v), "fp8") {
		return ""
	}
	switch strings.ToLower(v) {
	case "fp16", "float16", "half":
		return "f16"
	case "bfloat16":
		return "bf16"
	case "fp32", "float32":
		return "f32"
	}
	return v
}
