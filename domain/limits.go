package domain

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ErrOutOfRange is wrapped by every error of CheckShapeValue, so callers
// can tell a value no device runs from other failures.
var ErrOutOfRange = errors.New("beyond any device")

// Limit is the physical range of a numeric shape key: no engine on any
// device runs outside it, so a value beyond it stated by a log line (which
// any local user can write) is refused before it bounds any computation.
type Limit struct {
	// Min and Max bound the value; MinOpen excludes Min itself.
	Min, Max float64
	MinOpen  bool
	// Integer: the value must be whole.
	Integer bool
	// Unit names what the value counts ("sequences", "tokens", "bytes").
	Unit string
}

// String renders the range as messages show it: "1..1048576 sequences",
// "(0, 1]".
func (l Limit) String() string {
	if l.MinOpen {
		return "(" + num(l.Min) + ", " + num(l.Max) + "]"
	}
	s := num(l.Min) + ".." + num(l.Max)
	if l.Unit != "" {
		s += " " + l.Unit
	}
	return s
}

// num renders a value without an exponent up to 2^53, so a message shows
// the number the log or the request stated.
func num(v float64) string {
	if math.Abs(v) < 1<<53 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// limits of the shape keys the capacity model computes with. A million
// sequences in one engine, a context of 2^27 tokens, a KV pool of 2^40
// tokens or 256 TiB are each beyond every device made; a memory fraction
// is in (0, 1].
var limits = map[string]Limit{
	ShapeMaxNumSeqs:           {Min: 1, Max: 1 << 20, Integer: true, Unit: "sequences"},
	ShapeMaxModelLen:          {Min: 1, Max: 1 << 27, Integer: true, Unit: "tokens"},
	ShapeMaxNumBatchedTokens:  {Min: 1, Max: 1 << 27, Integer: true, Unit: "tokens"},
	ShapeKVCacheTokens:        {Min: 0, Max: 1 << 40, Integer: true, Unit: "tokens"},
	ShapeKVCacheMemoryBytes:   {Min: 0, Max: 1 << 48, Integer: true, Unit: "bytes"},
	ShapeGPUMemoryUtilization: {Min: 0, MinOpen: true, Max: 1},
	ShapeTensorParallelSize:   {Min: 1, Max: 1 << 16, Integer: true, Unit: "ranks"},
}

// LimitOf returns the physical range of a shape key; ok is false for keys
// without one (names, dtypes).
func LimitOf(key string) (Limit, bool) {
	l, ok := limits[key]
	return l, ok
}

// CheckShapeValue reports an error naming key, and wrapping ErrOutOfRange,
// when v is NaN, infinite, not whole where it must be, or outside the
// key's physical range. Keys without a range are not checked.
func CheckShapeValue(key string, v float64) error {
	l, ok := limits[key]
	if !ok {
		return nil
	}
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%s: %v is not a number (%w)", key, v, ErrOutOfRange)
	case l.Integer && v != math.Trunc(v):
		return fmt.Errorf("%s: %s is not a whole number (%w)", key, num(v), ErrOutOfRange)
	case v < l.Min || l.MinOpen && v == l.Min || v > l.Max:
		return fmt.Errorf("%s: %s is outside %s (%w)", key, num(v), l, ErrOutOfRange)
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
