package domain

import (
	"errors"
	"math"
	"testing"
)

func TestCheckShapeValue(t *testing.T) {
	for _, c := range []struct {
		key  string
		v    float64
		want string // "" = accepted; else the whole message
	}{
		{ShapeMaxNumSeqs, 256, ""},
		{ShapeMaxNumSeqs, 1 << 20, ""},
		{ShapeMaxNumSeqs, 1<<20 + 1, "max_num_seqs: 1048577 is outside 1..1048576 sequences (beyond any device)"},
		{ShapeMaxNumSeqs, 2e9, "max_num_seqs: 2000000000 is outside 1..1048576 sequences (beyond any device)"},
		{ShapeMaxNumSeqs, 0, "max_num_seqs: 0 is outside 1..1048576 sequences (beyond any device)"},
		{ShapeMaxNumSeqs, -3, "max_num_seqs: -3 is outside 1..1048576 sequences (beyond any device)"},
		{ShapeMaxNumSeqs, 2.5, "max_num_seqs: 2.5 is not a whole number (beyond any device)"},
		{ShapeMaxModelLen, 262144, ""},
		{ShapeMaxModelLen, 1 << 28, "max_model_len: 268435456 is outside 1..134217728 tokens (beyond any device)"},
		{ShapeMaxNumBatchedTokens, 1024, ""},
		{ShapeKVCacheTokens, 1449984, ""},
		{ShapeKVCacheTokens, 1<<40 + 1, "kv_cache_tokens: 1099511627777 is outside 0..1099511627776 tokens (beyond any device)"},
		{ShapeGPUMemoryUtilization, 0.92, ""},
		{ShapeGPUMemoryUtilization, 1, ""},
		{ShapeGPUMemoryUtilization, 0, "gpu_memory_utilization: 0 is outside (0, 1] (beyond any device)"},
		{ShapeGPUMemoryUtilization, 1.5, "gpu_memory_utilization: 1.5 is outside (0, 1] (beyond any device)"},
		{ShapeGPUMemoryUtilization, math.NaN(), "gpu_memory_utilization: NaN is not a number (beyond any device)"},
		{ShapeGPUMemoryUtilization, math.Inf(1), "gpu_memory_utilization: +Inf is not a number (beyond any device)"},
		{ShapeKVCacheMemoryBytes, 11047010304, ""},
		{ShapeKVCacheMemoryBytes, 1e300, "kv_cache_memory_bytes: 1e+300 is outside 0..281474976710656 bytes (beyond any device)"},
		{ShapeTensorParallelSize, 2, ""},
		{ShapeKVCacheDtype, math.NaN(), ""}, // not a ranged key
	} {
		err := CheckShapeValue(c.key, c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckShapeValue(%s, %v) = %v, want nil", c.key, c.v, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !errors.Is(err, ErrOutOfRange)):
			t.Errorf("CheckShapeValue(%s, %v) = %v, want %q", c.key, c.v, err, c.want)
		}
	}
	if l, ok := LimitOf(ShapeMaxNumSeqs); !ok || l.Max != 1<<20 || l.String() != "1..1048576 sequences" {
		t.Errorf("LimitOf(max_num_seqs) = %+v, %v", l, ok)
	}
	if _, ok := LimitOf(ShapeModel); ok {
		t.Error("a model name has a range")
	}
}

func TestShapeCheckLimits(t *testing.T) {
	// The night fixture's rung 8, as vLLM logged it.
	real := Shape{ShapeModel: "/models", ShapeMaxNumSeqs: int64(4), ShapeMaxModelLen: int64(262144), ShapeKVCacheDtype: "fp8",
		ShapeGPUMemoryUtilization: 0.98, ShapeKVCacheMemoryBytes: int64(8311013376), ShapeMaxNumBatchedTokens: int64(1024),
		ShapeTensorParallelSize: int64(2), ShapeKVCacheTokens: int64(1079616)}
	if err := real.CheckLimits(); err != nil {
		t.Errorf("CheckLimits of a real shape: %v", err)
	}
	for key, v := range map[string]any{ShapeMaxNumSeqs: int64(2000000000), ShapeGPUMemoryUtilization: math.NaN(),
		ShapeKVCacheTokens: int64(math.MaxInt64), ShapeMaxModelLen: 0.5} {
		s := Shape{}
		for k, x := range real {
			s[k] = x
		}
		s[key] = v
		err := s.CheckLimits()
		if !errors.Is(err, ErrOutOfRange) || err.Error()[:len(key)] != key {
			t.Errorf("%s=%v: %v", key, v, err)
		}
	}
	// A number written as text is left to its reader.
	if err := (Shape{ShapeMaxNumSeqs: "2000000000"}).CheckLimits(); err != nil {
		t.Errorf("text value: %v", err)
	}
}
