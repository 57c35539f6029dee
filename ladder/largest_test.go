package ladder

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
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
	memo := map[[2]int64]Prediction{}
	predict := func(n, mml int64) Prediction {
		pr, ok := memo[[2]int64{n, mml}]
		if !ok {
			pr = m.WhatIf(n, mml, dtype, mem)
			memo[[2]int64{n, mml}] = pr
		}
		return pr
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
				pr := predict(n, mml)
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
// up to maxSeqs) at one dtype, each passing or failing its boot as a
// monotone capacity would (some left inconsistent on purpose, some failing
// for KV allocation with the OOM line's numbers), with a pinned pool or
// none.
func randomLadder(r *rand.Rand, maxSeqs int) *Ladder {
	l := &Ladder{Target: "t", Engine: "vllm", Granularity: 16}
	limit := int64(r.IntN(2048)+64) * 16 // the contract that fits
	pinned := r.IntN(2) == 0
	for i := range r.IntN(6) + 2 {
		seqs, mml := int64(r.IntN(maxSeqs)+1), int64(r.IntN(96)+1)*16
		sh := domain.Shape{domain.ShapeMaxNumSeqs: seqs, domain.ShapeMaxModelLen: mml, domain.ShapeKVCacheDtype: "bf16"}
		if pinned {
			sh[domain.ShapeKVCacheMemoryBytes] = int64(8 << 30)
			sh[domain.ShapeKVCacheTokens] = limit
		}
		rung := Rung{N: i + 1, AttemptID: strconv.Itoa(i), Shape: sh, Boot: ClassPass}
		if seqs*mml > limit || r.IntN(8) == 0 {
			rung.Boot = ClassCapacityFail
			if r.IntN(3) == 0 {
				free := int64(r.IntN(8)) << 30
				rung.Verdict, rung.AllocAtFailure, rung.FreeAtFailureBytes = domain.VerdictOOMKVAlloc, "9.00 GiB", &free
			}
		}
		rung.Survive = rung.Boot
		if rung.Boot == ClassPass && r.IntN(4) == 0 {
			rung.Survive = ClassCapacityFail
		}
		rung.Class = rung.Survive
		l.Rungs = append(l.Rungs, rung)
	}
	return l
}

// TestLargestAgreesWithLinearSearch: on random ladders the bisection
// finds the same largest boot and survive shapes as walking every shape,
// with counts up to 64 and up to 256 (where a pinned pool makes the
// staircase step at dozens of counts between the rungs').
func TestLargestAgreesWithLinearSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 100
	if race.Enabled {
		n = 30 // the linear reference is slow under the race detector
	}
	worst := 0
	for i := range n {
		maxSeqs := 64
		if i%2 == 1 {
			maxSeqs = 256
		}
		l := randomLadder(r, maxSeqs)
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
		for _, f := range []*Fit{got.Boot, got.Survive} {
			if f != nil && (f.Prediction.MaxNumSeqs != f.MaxNumSeqs || f.Prediction.Boot.Outcome != OutcomeBoots) {
				t.Fatalf("ladder %d: the fit %s carries a prediction of %d × %d, boot %s", i, fitKey(f),
					f.Prediction.MaxNumSeqs, f.Prediction.MaxModelLen, f.Prediction.Boot.Outcome)
			}
		}
		// The search's outcomes without reasons are Predict's.
		for range 20 {
			sh := m.Proposal(int64(r.IntN(maxSeqs)+1), int64(r.IntN(96)+1)*16, "", mem)
			full, quiet := m.Predict(sh), m.predict(sh, true)
			for k, c := range [][2]Call{{full.Boot, quiet.Boot}, {full.Survive, quiet.Survive}} {
				if c[0].Outcome != c[1].Outcome || c[0].Rule != c[1].Rule || c[1].Reason != "" {
					t.Fatalf("ladder %d, %s, call %d: Predict %+v, quiet %+v", i, sh.Summary(), k, c[0], c[1])
				}
			}
		}
		var calls int
		if _, err := fmt.Sscanf(got.Reason[strings.Index(got.Reason, " with ")+len(" with "):], "%d predictions", &calls); err != nil {
			t.Fatalf("reason %q: %v", got.Reason, err)
		}
		worst = max(worst, calls)
	}
	t.Logf("at most %d predictions per search", worst)
}

// TestLargestOnAPinnedPoolOfAMillionSequences: a ladder that ran a million
// sequences with a pool far larger than any contract on the grid steps at
// thousands of counts; the search answers what the arithmetic says within
// its bound, and in well under a second.
func TestLargestOnAPinnedPoolOfAMillionSequences(t *testing.T) {
	const pool = 3 << 30 // tokens, pinned
	l := &Ladder{Target: "t", Engine: "vllm", Granularity: 16}
	bpt := 2.0
	for i, seqs := range []int64{1, 1 << 20} {
		l.Rungs = append(l.Rungs, Rung{N: i + 1, AttemptID: strconv.Itoa(i), Boot: ClassPass, Survive: ClassPass, Class: ClassPass,
			KVDtype: "bf16", KVBytesPerToken: &bpt,
			Shape: domain.Shape{domain.ShapeMaxNumSeqs: seqs, domain.ShapeMaxModelLen: int64(262144), domain.ShapeKVCacheDtype: "bf16",
				domain.ShapeKVCacheMemoryBytes: int64(pool) * 2, domain.ShapeKVCacheTokens: int64(pool)}})
	}
	m := NewModel(l)
	ctx, cancel := context.WithTimeout(context.Background(), race.Budget(10*time.Second)) // a hang fails, not a slow machine
	defer cancel()
	start := time.Now()
	lg, err := m.LargestContext(ctx, "", Memory{KVCacheMemoryBytes: pool * 2})
	took := time.Since(start)
	if err != nil || lg.Boot == nil {
		t.Fatalf("%v %+v", err, lg)
	}
	// 12288 × 262144 is exactly the pool: the largest contract there is.
	if lg.Boot.ContractTokens != pool || lg.Boot.MaxModelLen != 262144 || lg.Survive == nil || lg.Survive.ContractTokens != pool {
		t.Errorf("largest %s (%d tokens), survive %s: %s", fitKey(lg.Boot), lg.Boot.ContractTokens, fitKey(lg.Survive), lg.Reason)
	}
	t.Logf("%v: %s", took, lg.Reason)
}

func fitKey(f *Fit) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprintf("%d×%d", f.MaxNumSeqs, f.MaxModelLen)
}

// TestLargestOfAnyStatedShape: a rung whose log states two billion
// sequences (any local user writes to journald) is left out of the model
// and named in the answer; a rung of a million sequences, the most a
// device could run, is searched within the bound; a proposal or memory
// setting beyond any device is refused; a cancelled context stops the
// search at once.
func TestLargestOfAnyStatedShape(t *testing.T) {
	l := &Ladder{Target: "t", Engine: "vllm", Granularity: 16}
	for i, seqs := range []int64{4, 8, 2000000000, 1 << 20} {
		l.Rungs = append(l.Rungs, Rung{N: i + 1, AttemptID: strconv.Itoa(i), Boot: ClassPass, Survive: ClassPass, Class: ClassPass,
			Shape: domain.Shape{domain.ShapeMaxNumSeqs: seqs, domain.ShapeMaxModelLen: int64(262144), domain.ShapeKVCacheDtype: "bf16",
				domain.ShapeKVCacheTokens: seqs * 262144}})
	}
	m := NewModel(l)
	const left = "rung 3: max_num_seqs: 2000000000 is outside 1..1048576 sequences (beyond any device)"
	if len(m.OutOfRange) != 1 || m.OutOfRange[0] != left || m.seqsCap != 1<<20 {
		t.Fatalf("out of range %q, largest count %d", m.OutOfRange, m.seqsCap)
	}
	ctx, cancel := context.WithTimeout(context.Background(), race.Budget(10*time.Second)) // far above the work; a hang fails
	defer cancel()
	lg, err := m.LargestContext(ctx, "", Memory{})
	if err != nil || lg.Boot == nil || lg.Boot.MaxNumSeqs != 1<<20 || lg.Boot.MaxModelLen != 262144 {
		t.Fatalf("largest: %v %+v", err, lg.Boot)
	}
	if len(lg.OutOfRange) != 1 || !strings.HasSuffix(lg.Reason, "; left out, beyond any device: "+left) {
		t.Errorf("the answer does not name the rung left out: %q", lg.Reason)
	}

	pr := m.WhatIf(2000000000, 262144, "", Memory{})
	if pr.Boot.Outcome != OutcomeUnknown || pr.Boot.Rule != RuleOutOfRange || pr.TokensNeeded != 0 ||
		pr.Boot.Reason != "unknown: max_num_seqs: 2000000000 is outside 1..1048576 sequences (beyond any device)" {
		t.Errorf("a proposal of two billion sequences: %+v", pr.Boot)
	}
	for _, mem := range []Memory{{GPUMemoryUtilization: math.NaN()}, {GPUMemoryUtilization: 1.5}, {KVCacheMemoryBytes: 1 << 60}} {
		if _, err := m.LargestContext(ctx, "", mem); !errors.Is(err, domain.ErrOutOfRange) {
			t.Errorf("%+v: %v", mem, err)
		}
	}

	cancelled, stop := context.WithCancel(context.Background())
	stop()
	var cerr error
	c := fuzzcost.Measure(func() { _, cerr = m.LargestContext(cancelled, "", Memory{}) })
	if !errors.Is(cerr, context.Canceled) {
		t.Fatalf("cancelled search: %v", cerr)
	}
	if c.Time > race.Budget(100*time.Millisecond) {
		t.Errorf("a cancelled search took %v of CPU", c.Time)
	}
}

// FuzzModel builds a model from three rungs whose shapes come from the
// fuzzer (any value a log line can state) and asks for a prediction and
// the largest shape: they must answer within a second of CPU and 64 MiB,
// whatever the numbers, and never answer a shape beyond any device.
func FuzzModel(f *testing.F) {
	f.Add(int64(4), int64(262144), int64(1048576), int64(8311013376), int64(1024), 0.9,
		int64(8), int64(131072), int64(0), int64(0), int64(0),
		int64(6), int64(241664), int64(1449984), int64(0), int64(0),
		int64(16), int64(0), 0.0, uint8(0b010))
	f.Add(int64(2000000000), int64(4096), int64(0), int64(0), int64(0), 0.0,
		int64(1), int64(1<<27), int64(1<<40), int64(1<<48), int64(1<<27),
		int64(1<<20), int64(16), int64(1<<40), int64(0), int64(0),
		int64(1), int64(1<<40), 0.0, uint8(0b001))
	f.Add(int64(1<<20), int64(1<<27), int64(1<<40), int64(0), int64(0), 1.0,
		int64(1<<20-1), int64(16), int64(-5), int64(-1), int64(-7),
		int64(1), int64(1), int64(3<<30), int64(6<<30), int64(0),
		int64(1<<40), int64(6<<30), 0.0, uint8(0))
	f.Fuzz(func(t *testing.T, s1, m1, k1, b1, t1 int64, gmu float64, s2, m2, k2, b2, t2, s3, m3, k3, b3, t3 int64,
		gran, memBytes int64, memUtil float64, classes uint8) {
		l := &Ladder{Target: "t", Engine: "vllm", Granularity: gran}
		for i, v := range [][5]int64{{s1, m1, k1, b1, t1}, {s2, m2, k2, b2, t2}, {s3, m3, k3, b3, t3}} {
			sh := domain.Shape{domain.ShapeMaxNumSeqs: v[0], domain.ShapeMaxModelLen: v[1], domain.ShapeKVCacheDtype: "bf16"}
			for k, x := range map[string]int64{domain.ShapeKVCacheTokens: v[2], domain.ShapeKVCacheMemoryBytes: v[3], domain.ShapeMaxNumBatchedTokens: v[4]} {
				if x != 0 {
					sh[k] = x
				}
			}
			if gmu != 0 {
				sh[domain.ShapeGPUMemoryUtilization] = gmu
			}
			r := Rung{N: i + 1, AttemptID: strconv.Itoa(i), Shape: sh, Boot: ClassPass, Survive: ClassPass, KVDtype: "bf16"}
			if v[2] > 0 && v[3] > 0 {
				bpt := float64(v[3]) / float64(v[2])
				r.KVBytesPerToken = &bpt
			}
			if classes>>i&1 == 1 {
				r.Boot, r.Survive = ClassCapacityFail, ClassCapacityFail
				if classes>>(i+3)&1 == 1 {
					free := v[3] / 2
					r.Verdict, r.AllocAtFailure, r.FreeAtFailureBytes = domain.VerdictOOMKVAlloc, strconv.FormatInt(v[3], 10), &free
				}
			} else if classes>>(i+3)&1 == 1 {
				r.Survive = ClassCapacityFail
			}
			r.Class = r.Survive
			l.Rungs = append(l.Rungs, r)
		}
		mem := Memory{KVCacheMemoryBytes: memBytes, GPUMemoryUtilization: memUtil}
		if classes>>7&1 == 1 {
			mem.KVCacheMemoryBytes = 0 // one setting, as the callers pass it
		} else {
			mem.GPUMemoryUtilization = 0
		}
		// The worst inputs spend the search's whole bound: seed
		// 4b878841788a416c (a pool of 2^40 tokens on a million
		// sequences) takes about 70 ms of CPU.
		fuzzcost.Check(t, fuzzcost.Budget{Bytes: 64 << 20, Time: race.Budget(time.Second)}, func() {
			m := NewModel(l)
			m.WhatIf(s1, m1, "", mem)
			lg, err := m.LargestContext(context.Background(), "", mem)
			if err != nil {
				if !errors.Is(err, domain.ErrOutOfRange) || mem.check() == nil {
					t.Fatalf("%+v: %v", mem, err)
				}
				return
			}
			for _, fit := range []*Fit{lg.Boot, lg.Survive} {
				if fit == nil {
					continue
				}
				if err := checkShape(m.Proposal(fit.MaxNumSeqs, fit.MaxModelLen, "", mem)); err != nil {
					t.Fatalf("fit beyond any device: %+v: %v", fit, err)
				}
				if fit.Prediction.Boot.Outcome != OutcomeBoots {
					t.Fatalf("fit %s predicted %s", fitKey(fit), fit.Prediction.Boot.Outcome)
				}
			}
		})
	})
}
