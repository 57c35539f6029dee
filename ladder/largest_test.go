package ladder

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/fuzzcost"
	"github.com/llmfleet/analyzer/internal/race"
)

// linearLargest is the search Largest made before it bisected: every
// sequence count up to the largest tried, every max_model_len on the grid
// from the top. It is the reference the bisection must agree with.
func linearLargest(m *Model, dtype string, mem Memory) Largest {
	if dtype == "" && m.ref != nil {
		dtype = m.ref.Shape.String(domain.ShapeKVCacheDtype)
	}
	out := Largest{KVDtype: dtype}
	g := max(m.Granularity, 1)
	if m.mmlCap < g || m.seqsCap < 1 {
		return out
	}
	steps := m.mmlCap / g
	stride := int64(1)
	if steps > 4096 {
		stride = (steps + 4095) / 4096
	}
	for n := int64(1); n <= m.seqsCap; n++ {
		for _, survive := range []bool{false, true} {
			cur := out.Boot
			if survive {
				cur = out.Survive
			}
			for k := steps; k >= 1; k -= stride {
				mml := k * g
				if cur != nil && n*mml < cur.ContractTokens {
					break
				}
				pr := m.WhatIf(n, mml, dtype, mem)
				c := pr.Boot
				if survive {
					c = pr.Survive
				}
				if c.Outcome != OutcomeBoots || (pr.PoolTokens != nil && *pr.PoolTokens < n*mml) {
					continue
				}
				if cur == nil || n*mml > cur.ContractTokens || (n*mml == cur.ContractTokens && mml > cur.MaxModelLen) {
					cur = &Fit{MaxNumSeqs: n, MaxModelLen: mml, ContractTokens: n * mml}
				}
				break
			}
			if survive {
				out.Survive = cur
			} else {
				out.Boot = cur
			}
		}
	}
	return out
}

// randomLadder is a ladder of 2-7 rungs of random sizes (sequence counts
// up to 64, so the bisection's candidate counts cover every count) at one
// dtype, each passing or failing its boot as a monotone capacity would
// (some left inconsistent on purpose), with a pinned pool or none.
func randomLadder(r *rand.Rand) *Ladder {
	l := &Ladder{Target: "t", Engine: "vllm", Granularity: 16}
	limit := int64(r.IntN(2048)+64) * 16 // the contract that fits
	pinned := r.IntN(2) == 0
	for i := range r.IntN(6) + 2 {
		seqs, mml := int64(r.IntN(64)+1), int64(r.IntN(96)+1)*16
		sh := domain.Shape{domain.ShapeMaxNumSeqs: seqs, domain.ShapeMaxModelLen: mml, domain.ShapeKVCacheDtype: "bf16"}
		if pinned {
			sh[domain.ShapeKVCacheMemoryBytes] = int64(8 << 30)
			sh[domain.ShapeKVCacheTokens] = limit
		}
		boot := ClassPass
		if seqs*mml > limit || r.IntN(8) == 0 {
			boot = ClassCapacityFail
		}
		surv := boot
		if boot == ClassPass && r.IntN(4) == 0 {
			surv = ClassCapacityFail
		}
		l.Rungs = append(l.Rungs, Rung{N: i + 1, AttemptID: strconv.Itoa(i), Shape: sh, Boot: boot, Survive: surv, Class: surv})
	}
	return l
}

// TestLargestAgreesWithLinearSearch: on 300 random ladders the bisection
// finds the same largest boot and survive shapes as walking every shape.
func TestLargestAgreesWithLinearSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if race.Enabled {
		n = 60 // the linear reference is slow under the race detector
	}
	for i := range n {
		l := randomLadder(r)
		m := NewModel(l)
		mem := Memory{}
		if r.IntN(2) == 0 {
			mem.KVCacheMemoryBytes = 8 << 30
		}
		got, want := m.Largest("", mem), linearLargest(m, "", mem)
		if fitKey(got.Boot) != fitKey(want.Boot) || fitKey(got.Survive) != fitKey(want.Survive) {
			t.Fatalf("ladder %d %+v: boot %s survive %s, linear boot %s survive %s", i, l.Rungs,
				fitKey(got.Boot), fitKey(got.Survive), fitKey(want.Boot), fitKey(want.Survive))
		}
	}
}

func fitKey(f *Fit) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("%d×%d", f.MaxNumSeqs, f.MaxModelLen)
}

// TestLargestOfAnyStatedShape: a rung whose log states two billion
// sequences (any local user writes to journald) is left out of the model
// and named; a rung of a million sequences, the most a device could run,
// is searched in well under a second; a cancelled context stops the
// search at once.
func TestLargestOfAnyStatedShape(t *testing.T) {
	l := &Ladder{Target: "t", Engine: "vllm", Granularity: 16}
	for i, seqs := range []int64{4, 8, 2000000000, 1 << 20} {
		l.Rungs = append(l.Rungs, Rung{N: i + 1, AttemptID: strconv.Itoa(i), Boot: ClassPass, Survive: ClassPass, Class: ClassPass,
			Shape: domain.Shape{domain.ShapeMaxNumSeqs: seqs, domain.ShapeMaxModelLen: int64(262144), domain.ShapeKVCacheDtype: "bf16",
				domain.ShapeKVCacheTokens: seqs * 262144}})
	}
	m := NewModel(l)
	if len(m.OutOfRange) != 1 || m.seqsCap != 1<<20 {
		t.Fatalf("out of range %q, largest count %d", m.OutOfRange, m.seqsCap)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // far above the work; a hang fails
	defer cancel()
	lg, err := m.LargestContext(ctx, "", Memory{})
	if err != nil || lg.Boot == nil || lg.Boot.MaxNumSeqs != 1<<20 || lg.Boot.MaxModelLen != 262144 {
		t.Fatalf("largest: %v %+v", err, lg.Boot)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if _, err := m.LargestContext(cancelled, "", Memory{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled search: %v", err)
	}
}

// FuzzModel builds a model from rungs whose shapes come from the fuzzer
// (any value a log line can state) and asks for the largest shape: it must
// answer within a second of CPU and 64 MiB, whatever the numbers.
func FuzzModel(f *testing.F) {
	f.Add(int64(4), int64(262144), int64(1048576), int64(8), int64(131072), int64(0), 0.9, uint8(3))
	f.Add(int64(2000000000), int64(4096), int64(0), int64(1), int64(1<<27), int64(1<<40), 0.0, uint8(1))
	f.Add(int64(1<<20), int64(1<<27), int64(1<<40), int64(1<<20-1), int64(16), int64(-5), 1.0, uint8(2))
	f.Fuzz(func(t *testing.T, s1, m1, k1, s2, m2, k2 int64, gmu float64, classes uint8) {
		l := &Ladder{Target: "t", Engine: "vllm", Granularity: 16}
		for i, v := range [][3]int64{{s1, m1, k1}, {s2, m2, k2}} {
			sh := domain.Shape{domain.ShapeMaxNumSeqs: v[0], domain.ShapeMaxModelLen: v[1], domain.ShapeKVCacheDtype: "bf16"}
			if v[2] != 0 {
				sh[domain.ShapeKVCacheTokens] = v[2]
			}
			if gmu != 0 {
				sh[domain.ShapeGPUMemoryUtilization] = gmu
			}
			c := ClassPass
			if classes>>i&1 == 1 {
				c = ClassCapacityFail
			}
			l.Rungs = append(l.Rungs, Rung{N: i + 1, AttemptID: strconv.Itoa(i), Shape: sh, Boot: c, Survive: c, Class: c})
		}
		// The worst input found (a million sequences beside a million
		// minus one, 2^27 tokens) takes 40-80 ms of CPU.
		fuzzcost.Check(t, fuzzcost.Budget{Bytes: 64 << 20, Time: race.Budget(time.Second)}, func() {
			m := NewModel(l)
			lg, err := m.LargestContext(context.Background(), "", Memory{GPUMemoryUtilization: gmu})
			if err != nil {
				t.Fatal(err)
			}
			for _, fit := range []*Fit{lg.Boot, lg.Survive} {
				if fit != nil && (fit.MaxNumSeqs < 1 || fit.MaxNumSeqs > 1<<20 || fit.MaxModelLen < 1 || fit.MaxModelLen > 1<<27) {
					t.Fatalf("fit outside the physical range: %+v", fit)
				}
			}
		})
	})
}
