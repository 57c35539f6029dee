package domain

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Shape keys of the spec ("Shape keys (normalized)"). Engine-specific names
// map onto these; other keys an engine reports are kept as they are.
const (
	ShapeModel                = "model"
	ShapeServedModelName      = "served_model_name"
	ShapeMaxModelLen          = "max_model_len"          // tokens
	ShapeMaxNumSeqs           = "max_num_seqs"           // sequences
	ShapeMaxNumBatchedTokens  = "max_num_batched_tokens" // tokens
	ShapeGPUMemoryUtilization = "gpu_memory_utilization" // fraction 0..1
	ShapeKVCacheDtype         = "kv_cache_dtype"
	ShapeKVCacheMemoryBytes   = "kv_cache_memory_bytes" // bytes, per rank
	ShapeKVCacheTokens        = "kv_cache_tokens"       // tokens
	ShapeMaxConcurrency       = "max_concurrency"       // requests of max_model_len
	ShapeTensorParallelSize   = "tensor_parallel_size"
	ShapeEnforceEager         = "enforce_eager"
	ShapeSpeculative          = "speculative"
	ShapeQuantization         = "quantization"
	// ShapeCompileCache is "warm" when the engine loaded its compiled
	// graphs from its cache and "cold" when it compiled them: not a spec
	// key, but a warm compile cache makes a boot minutes shorter, so boot
	// times are compared within one cache state.
	ShapeCompileCache = "compile_cache"
)

// SpecShapeKeys are the shape keys the spec names, in its order.
var SpecShapeKeys = []string{ShapeModel, ShapeServedModelName, ShapeMaxModelLen, ShapeMaxNumSeqs,
	ShapeMaxNumBatchedTokens, ShapeGPUMemoryUtilization, ShapeKVCacheDtype, ShapeKVCacheMemoryBytes,
	ShapeKVCacheTokens, ShapeMaxConcurrency, ShapeTensorParallelSize, ShapeEnforceEager, ShapeSpeculative,
	ShapeQuantization}

// SpecKeys are s's keys the spec names, in the spec's order.
func (s Shape) SpecKeys() []string {
	var out []string
	for _, k := range SpecShapeKeys {
		if _, ok := s[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// ExtraKeys are s's other keys (the spec's `extra`), sorted.
func (s Shape) ExtraKeys() []string {
	var out []string
	for _, k := range s.Keys() {
		if !slices.Contains(SpecShapeKeys, k) {
			out = append(out, k)
		}
	}
	return out
}

// Shape is an attempt's configuration and sizing as the engine reported it.
// Values are int64, float64, bool or string: numbers are numbers (commas
// removed), byte sizes are bytes.
type Shape map[string]any

// Set stores v under key; a nil or empty value is ignored.
func (s Shape) Set(key string, v any) {
	if v == nil {
		return
	}
	if str, ok := v.(string); ok && str == "" {
		return
	}
	s[key] = v
}

// Int returns the value of key as an integer.
func (s Shape) Int(key string) (int64, bool) {
	switch v := s[key].(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64:
		if v == math.Trunc(v) {
			return int64(v), true
		}
	}
	return 0, false
}

// Float returns the value of key as a float.
func (s Shape) Float(key string) (float64, bool) {
	switch v := s[key].(type) {
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// String returns the value of key formatted as text ("" when absent).
func (s Shape) String(key string) string {
	v, ok := s[key]
	if !ok {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// Keys returns the keys in sorted order.
func (s Shape) Keys() []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Summary renders the shape the way operators write it in their ladders:
// "3 × 262144 bf16 KV 11.05 GB".
func (s Shape) Summary() string {
	var parts []string
	seqs, okS := s.Int(ShapeMaxNumSeqs)
	mml, okM := s.Int(ShapeMaxModelLen)
	switch {
	case okS && okM:
		parts = append(parts, fmt.Sprintf("%d × %d", seqs, mml))
	case okM:
		parts = append(parts, fmt.Sprintf("%d ctx", mml))
	}
	if dt := s.String(ShapeKVCacheDtype); dt != "" {
		if dt == "auto" {
			dt = "bf16"
		}
		parts = append(parts, dt)
	}
	if b, ok := s.Int(ShapeKVCacheMemoryBytes); ok {
		parts = append(parts, fmt.Sprintf("KV %.2f GB", float64(b)/1e9))
	}
	if t, ok := s.Int(ShapeKVCacheTokens); ok {
		parts = append(parts, fmt.Sprintf("%d KV tokens", t))
	}
	return strings.Join(parts, " ")
}

// ParseBytes converts "76.00 MiB", "10.70 GiB", "11.05 GB", "512 KiB" or a
// plain number to bytes. Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB,
// GB, TB) units are honoured; a bare number is bytes.
func ParseBytes(s string) (float64, bool) {
	s = strings.TrimSpace(strings.ReplaceAll(s, ",", ""))
	i := 0
	for i < len(s) && (s[i] == '.' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
		i++
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		return 0, false
	}
	unit := strings.ToLower(strings.TrimSpace(s[i:]))
	mult := map[string]float64{
		"": 1, "b": 1, "bytes": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
		"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
	}[unit]
	if mult == 0 {
		return 0, false
	}
	return f * mult, true
}

// ParseByteCount is ParseBytes rounded to a whole number of bytes; ok is
// false when the size does not fit an int64 (Go leaves such a conversion
// to the platform, and the text comes from a log or a request).
func ParseByteCount(s string) (int64, bool) {
	f, ok := ParseBytes(s)
	f = math.Round(f)
	if !ok || !(f > -(1<<63) && f < 1<<63) {
		return 0, false
	}
	return int64(f), true
}
