package domain

import (
	"fmt"
	"math"
)

// Limit is the physical range of a numeric shape key: no engine on any
// device runs outside it, so a value beyond it stated by a log line (which
// any local user can write) is refused before it bounds any computation.
type Limit struct {
	Min, Max float64
	// Integer: the value must be whole.
	Integer bool
}

// limits of the shape keys the capacity model computes with. Two million
// sequences in one engine, a context of 2^27 tokens, a KV pool of 2^40
// tokens or 256 TiB are each beyond every device made; a memory fraction
// is in (0, 1].
var limits = map[string]Limit{
	ShapeMaxNumSeqs:           {Min: 1, Max: 1 << 20, Integer: true},
	ShapeMaxModelLen:          {Min: 1, Max: 1 << 27, Integer: true},
	ShapeMaxNumBatchedTokens:  {Min: 1, Max: 1 << 27, Integer: true},
	ShapeKVCacheTokens:        {Min: 0, Max: 1 << 40, Integer: true},
	ShapeKVCacheMemoryBytes:   {Min: 0, Max: 1 << 48, Integer: true},
	ShapeGPUMemoryUtilization: {Min: math.SmallestNonzeroFloat64, Max: 1},
	ShapeTensorParallelSize:   {Min: 1, Max: 1 << 16, Integer: true},
}

// LimitOf returns the physical range of a shape key; ok is false for keys
// without one (names, dtypes).
func LimitOf(key string) (Limit, bool) {
	l, ok := limits[key]
	return l, ok
}

// CheckShapeValue reports an error naming key when v is NaN, infinite,
// not whole where it must be, or outside the key's physical range. Keys
// without a range are not checked.
func CheckShapeValue(key string, v float64) error {
	l, ok := limits[key]
	if !ok {
		return nil
	}
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s: %v is not a number", key, v)
	case l.Integer && v != math.Trunc(v):
		return fmt.Errorf("%s: %v is not a whole number", key, v)
	case v < l.Min || v > l.Max:
		return fmt.Errorf("%s: %v is outside %v..%v", key, v, l.Min, l.Max)
	}
	return nil
}

// CheckLimits checks every ranged key the shape holds as a number
// (CheckShapeValue); it returns the first error, in SpecShapeKeys order.
// Values that are not numbers are left to the code that reads them.
func (s Shape) CheckLimits() error {
	for _, k := range SpecShapeKeys {
		if _, ranged := limits[k]; !ranged {
			continue
		}
		f, ok := s.Float(k)
		if !ok {
			continue
		}
		if err := CheckShapeValue(k, f); err != nil {
			return err
		}
	}
	return nil
}
