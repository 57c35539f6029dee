package ladder_test

import (
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ladder"
)

// TestEngineFlags: a rung's shape as each engine's own flags.
func TestEngineFlags(t *testing.T) {
	rung := domain.Shape{domain.ShapeMaxNumSeqs: int64(5), domain.ShapeMaxModelLen: int64(233472), domain.ShapeKVCacheDtype: "fp8"}
	for _, tc := range []struct {
		engine string
		shape  domain.Shape
		want   string
	}{
		{"vllm", rung, "--max-num-seqs 5 --max-model-len 233472 --kv-cache-dtype fp8"},
		{"sglang", rung, "--max-running-requests 5 --context-length 233472 --kv-cache-dtype fp8_e4m3"},
		// llama-server splits --ctx-size among its slots: 5 × 233472.
		// llama.cpp has no fp8 cache type: no flag rather than a wrong one.
		{"llamacpp", rung, "--parallel 5 --ctx-size 1167360"},
		{"llamacpp", domain.Shape{domain.ShapeMaxNumSeqs: int64(4), domain.ShapeMaxModelLen: int64(8192), domain.ShapeKVCacheDtype: "q8_0"},
			"--parallel 4 --ctx-size 32768 --cache-type-k q8_0 --cache-type-v q8_0"},
		{"llamacpp", domain.Shape{domain.ShapeMaxModelLen: int64(8192), domain.ShapeKVCacheDtype: "fp16"}, "--ctx-size 8192 --cache-type-k f16 --cache-type-v f16"},
		// A 16-bit KV cache is the model's dtype: "auto".
		{"vllm", domain.Shape{domain.ShapeMaxNumSeqs: int64(2), domain.ShapeMaxModelLen: int64(98304), domain.ShapeKVCacheDtype: "bf16"},
			"--max-num-seqs 2 --max-model-len 98304 --kv-cache-dtype auto"},
		{"sglang", domain.Shape{domain.ShapeGPUMemoryUtilization: 0.85, domain.ShapeTensorParallelSize: int64(2), domain.ShapeEnforceEager: true, domain.ShapeKVCacheDtype: "fp8_e5m2"},
			"--kv-cache-dtype fp8_e5m2 --mem-fraction-static 0.85 --tp-size 2 --disable-cuda-graph"},
		{"vllm", domain.Shape{domain.ShapeGPUMemoryUtilization: 0.9, domain.ShapeEnforceEager: false, domain.ShapeKVCacheMemoryBytes: int64(11047010304)},
			"--kv-cache-memory-bytes 11047010304 --gpu-memory-utilization 0.9"},
		{"vllm", domain.Shape{domain.ShapeModel: "Qwen/Qwen3", domain.ShapeMaxNumSeqs: int64(3)}, "--max-num-seqs 3"},
		{"halogen", rung, ""},
		{"vllm", nil, ""},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			if got := ladder.EngineFlags(tc.engine, tc.shape); got != tc.want {
				t.Errorf("%s %v:\n got %q\nwant %q", tc.engine, tc.shape, got, tc.want)
			}
		})
	}
}
