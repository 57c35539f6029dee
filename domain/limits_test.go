package domain

import (
	"math"
	"strings"
	"testing"
)

func TestCheckShapeValue(t *testing.T) {
	for _, c := range []struct {
		key  string
		v    float64
		want string // "" = accepted; else a word of the error
	}{
		{ShapeMaxNumSeqs, 256, ""},
		{ShapeMaxNumSeqs, 1 << 20, ""},
		{ShapeMaxNumSeqs, 2e9, "outside"},
		{ShapeMaxNumSeqs, 0, "outside"},
		{ShapeMaxNumSeqs, 2.5, "whole"},
		{ShapeMaxModelLen, 262144, ""},
		{ShapeMaxModelLen, 1 << 28, "outside"},
		{ShapeGPUMemoryUtilization, 0.92, ""},
		{ShapeGPUMemoryUtilization, 1, ""},
		{ShapeGPUMemoryUtilization, 0, "outside"},
		{ShapeGPUMemoryUtilization, 1.5, "outside"},
		{ShapeGPUMemoryUtilization, math.NaN(), "not a number"},
		{ShapeGPUMemoryUtilization, math.Inf(1), "not a number"},
		{ShapeKVCacheMemoryBytes, 11047010304, ""},
		{ShapeKVCacheMemoryBytes, 1e300, "outside"},
		{ShapeKVCacheDtype, math.NaN(), ""}, // not a ranged key
	} {
		err := CheckShapeValue(c.key, c.v)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.key)) {
			t.Errorf("CheckShapeValue(%s, %v) = %v, want %q", c.key, c.v, err, c.want)
		}
	}
	if err := (Shape{ShapeMaxNumSeqs: int64(2000000000), ShapeModel: "m"}).CheckLimits(); err == nil || !strings.Contains(err.Error(), ShapeMaxNumSeqs) {
		t.Errorf("CheckLimits: %v", err)
	}
	if err := (Shape{ShapeMaxNumSeqs: int64(4), ShapeMaxModelLen: int64(262144), ShapeKVCacheDtype: "fp8"}).CheckLimits(); err != nil {
		t.Errorf("CheckLimits of a real shape: %v", err)
	}
}
