package ladder

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llmfleet/analyzer/domain"
)

// This file is the capacity model of a ladder target: from the rungs
// alone it predicts whether a proposed shape boots and survives, and the
// largest shape predicted to.
//
// What it knows, per target:
//   - the KV bytes per token of each KV dtype (kv_cache_memory_bytes /
//     kv_cache_tokens of the rungs that logged both);
//   - the KV pool of each rung, in tokens (the engine's own pool line:
//     vLLM "GPU KV cache size", SGLang max_total_num_tokens / "#tokens",
//     llama.cpp cells, halogen "kv pool: N positions" or
//     HALOGEN_KV_POOL_POSITIONS) and in bytes (kv_cache_memory_bytes, else
//     tokens × bytes per token);
//   - what the OOM lines asked for and had free (graph capture, KV
//     allocation, serving);
//   - monotone constraints: a shape no larger than one that booted, in
//     every resource (KV pool, max_num_seqs, max_model_len,
//     max_num_batched_tokens), boots; a shape no smaller than one that
//     failed for capacity fails.
//
// Rungs are compared only when their other settings (tensor parallelism,
// quantization, model, eager mode, speculative decoding and any other key
// the engine reported) are the same. Non-capacity failures
// (dynamo_constraint_violation, config_error, ...) never count. Where the
// rungs do not decide a shape the answer is unknown.

// Prediction outcomes, for booting and for surviving.
const (
	OutcomeBoots   = "boots"
	OutcomeFails   = "fails"
	OutcomeUnknown = "unknown"
)

// Rules a Call can be decided by.
const (
	// RulePoolTooSmall: the KV pool holds fewer tokens than one request of
	// max_model_len (vLLM refuses such a shape: kv_cache_insufficient).
	RulePoolTooSmall = "pool_too_small"
	// RuleSameShape: a rung ran the same shape.
	RuleSameShape = "same_shape"
	// RuleNoLargerThanPass: a rung at least as large in every resource
	// booted (or, for surviving, stayed up).
	RuleNoLargerThanPass = "no_larger_than_pass"
	// RuleNoSmallerThanFailure: a rung no larger in any resource failed for
	// capacity.
	RuleNoSmallerThanFailure = "no_smaller_than_failure"
	// RuleKVAllocFree: the pool needs more bytes than were free when a
	// rung's KV allocation ran out of memory.
	RuleKVAllocFree = "kv_alloc_free"
	// RuleCaptureHeadroom: a rung's graph capture asked more than was free;
	// a pool this large leaves even less.
	RuleCaptureHeadroom = "capture_headroom"
	// RuleRuntimeHeadroom: as RuleCaptureHeadroom, for an OOM while serving.
	RuleRuntimeHeadroom = "runtime_headroom"
	// RuleDoesNotBoot: (surviving) the shape is predicted not to boot.
	RuleDoesNotBoot = "does_not_boot"
	// RuleInconsistent: rungs decide both ways.
	RuleInconsistent = "inconsistent"
	// RuleNoEvidence: no rung decides.
	RuleNoEvidence = "no_evidence"
	// RuleOutOfRange: a value of the shape is beyond any device
	// (domain.CheckShapeValue); nothing is computed from it.
	RuleOutOfRange = "out_of_range"
)

// Call is a predicted outcome, for booting or for surviving.
type Call struct {
	// Outcome is OutcomeBoots, OutcomeFails (for lack of capacity) or
	// OutcomeUnknown. For surviving, "boots" means it boots and stays up.
	Outcome string `json:"outcome"`
	// Rule names what decided (one of the Rule constants).
	Rule string `json:"rule"`
	// Reason is the decision in one sentence: the rung or the arithmetic.
	Reason string `json:"reason"`
	// Rung is the rung that decides (0 when arithmetic alone or nothing
	// decides); Also lists other rungs that lead to the same outcome.
	Rung int   `json:"rung,omitempty"`
	Also []int `json:"also,omitempty"`
	// NeedBytes is what the shape needs for the decisive allocation (its
	// KV pool), AskedBytes and FreeBytes what the decisive rung's OOM line
	// asked for and had free, LimitBytes the largest pool the arithmetic
	// allows; bytes, per rank.
	NeedBytes  *int64 `json:"need_bytes,omitempty"`
	AskedBytes *int64 `json:"asked_bytes,omitempty"`
	FreeBytes  *int64 `json:"free_bytes,omitempty"`
	LimitBytes *int64 `json:"limit_bytes,omitempty"`
	// Settings are settings of the deciding rung that the proposal left
	// open (max_num_batched_tokens): the outcome holds at those.
	Settings map[string]string `json:"settings,omitempty"`
}

// Memory is the memory setting of a proposed shape. At most one field is
// set; with none the KV pool is the one that holds the contract
// (max_num_seqs × max_model_len tokens).
type Memory struct {
	// KVCacheMemoryBytes pins the KV pool, in bytes per rank (vLLM
	// kv_cache_memory_bytes).
	KVCacheMemoryBytes int64 `json:"kv_cache_memory_bytes,omitempty"`
	// GPUMemoryUtilization is the fraction (0..1] of device memory the
	// engine may use (vLLM gpu_memory_utilization, SGLang
	// mem_fraction_static); the pool is then what rungs at that fraction
	// got.
	GPUMemoryUtilization float64 `json:"gpu_memory_utilization,omitempty"`
}

// String renders the setting as its shape key: "kv_cache_memory_bytes=
// 6100000000", "gpu_memory_utilization=0.98", or "" for none.
func (m Memory) String() string {
	switch {
	case m.KVCacheMemoryBytes > 0:
		return domain.ShapeKVCacheMemoryBytes + "=" + strconv.FormatInt(m.KVCacheMemoryBytes, 10)
	case m.GPUMemoryUtilization > 0:
		return domain.ShapeGPUMemoryUtilization + "=" + strconv.FormatFloat(m.GPUMemoryUtilization, 'f', -1, 64)
	}
	return ""
}

// Prediction is what the model says about one proposed shape.
type Prediction struct {
	Target string `json:"target"`
	Engine string `json:"engine"`
	// MaxNumSeqs (sequences), MaxModelLen (tokens) and KVDtype are the
	// proposal; Memory its memory setting ("" when the pool is sized to
	// hold the contract).
	MaxNumSeqs  int64  `json:"max_num_seqs"`
	MaxModelLen int64  `json:"max_model_len"`
	KVDtype     string `json:"kv_cache_dtype"`
	Memory      string `json:"memory"`
	// TokensNeeded is the contract, max_num_seqs × max_model_len, tokens.
	TokensNeeded int64 `json:"tokens_needed"`
	// PoolTokens and PoolBytes are the KV pool the shape gets (tokens;
	// bytes per rank); nil when the model cannot tell. KVBytesPerToken is
	// the target's KV bytes per token at KVDtype.
	PoolTokens      *int64   `json:"pool_tokens,omitempty"`
	PoolBytes       *int64   `json:"pool_bytes,omitempty"`
	KVBytesPerToken *float64 `json:"kv_bytes_per_token,omitempty"`
	// Boot and Survive are the predictions.
	Boot    Call `json:"boot"`
	Survive Call `json:"survive"`
	// Flags is the proposal as the engine's own flags (SizingFlags).
	Flags string `json:"flags"`
	// Notes are remarks that do not change the outcome (a pool that does
	// not hold the whole contract, settings taken from a rung).
	Notes []string `json:"notes"`
}

// Fit is a shape predicted to boot (or survive), with its prediction.
type Fit struct {
	MaxNumSeqs  int64 `json:"max_num_seqs"`
	MaxModelLen int64 `json:"max_model_len"`
	// ContractTokens is max_num_seqs × max_model_len, tokens.
	ContractTokens int64 `json:"contract_tokens"`
	// Flags renders the shape as the engine's flags (SizingFlags), with the
	// settings of the deciding rung the proposal left open.
	Flags      string     `json:"flags"`
	Prediction Prediction `json:"prediction"`
}

// Largest is the largest contract predicted to boot and to survive, for
// one KV dtype and memory setting, on the engine's block grid.
type Largest struct {
	KVDtype string `json:"kv_cache_dtype"`
	Memory  string `json:"memory"`
	// Granularity is the grid of max_model_len, tokens.
	Granularity int64 `json:"granularity"`
	// Boot and Survive are nil when no shape on the grid is predicted to
	// boot / survive. Reason says why, or how the search was bounded.
	Boot    *Fit   `json:"boot,omitempty"`
	Survive *Fit   `json:"survive,omitempty"`
	Reason  string `json:"reason"`
	// OutOfRange names the rungs the model left out because a shape value
	// is beyond any device (Model.OutOfRange).
	OutOfRange []string `json:"out_of_range,omitempty"`
}

// shapeKVPoolPositions is halogen's pinned pool, in tokens
// (HALOGEN_KV_POOL_POSITIONS).
const shapeKVPoolPositions = "kv_pool_positions"

// notSettings are the shape keys that are not "other settings": sizing,
// memory, outcome and naming keys. Every other key must be equal for two
// rungs to be compared.
var notSettings = map[string]bool{
	domain.ShapeMaxNumSeqs: true, domain.ShapeMaxModelLen: true, domain.ShapeKVCacheDtype: true,
	domain.ShapeKVCacheMemoryBytes: true, domain.ShapeGPUMemoryUtilization: true, shapeKVPoolPositions: true,
	domain.ShapeKVCacheTokens: true, domain.ShapeMaxConcurrency: true, domain.ShapeMaxNumBatchedTokens: true,
	domain.ShapeServedModelName: true,
}

// point is a shape with its resources: a rung or a proposal.
type point struct {
	r          *Rung // nil for a proposal
	dtype      string
	seqs, mml  int64
	mnbt       int64 // max_num_batched_tokens; 0 = not known / open
	poolTokens int64 // 0 = unknown
	poolBytes  int64 // 0 = unknown
	settings   string
	memory     string
	// asked and free are the OOM line's numbers, bytes (hasOOM).
	asked, free int64
	hasOOM      bool
	// survivePass is r.Survive == pass and no rung at most as large died
	// under traffic (dying outweighs a boot that was stopped early).
	survivePass bool
	overridden  int
	// quiet: a proposal the search asks about, which needs outcomes only;
	// flags, notes and reasons are most of a prediction's cost.
	quiet bool
}

// Model is the capacity model of one ladder.
type Model struct {
	Target      string
	Engine      string
	Granularity int64
	// BytesPerToken is the KV bytes per token per KV dtype (median).
	BytesPerToken map[string]float64
	// OutOfRange names the rungs left out because a shape value is beyond
	// any device (domain.CheckShapeValue): "rung 7: max_num_seqs: ...".
	OutOfRange []string
	points     []*point
	ref        *Rung
	mmlCap     int64
	seqsCap    int64
}

// NewModel builds the capacity model of l from its rungs, leaving out the
// rungs numbered in exclude (leave-one-out).
func NewModel(l *Ladder, exclude ...int) *Model {
	m := &Model{Target: l.Target, Engine: l.Engine, Granularity: l.Granularity}
	skip := map[int]bool{}
	for _, n := range exclude {
		skip[n] = true
	}
	var rungs []*Rung
	for i := range l.Rungs {
		r := &l.Rungs[i]
		if skip[r.N] {
			continue
		}
		if err := checkShape(r.Shape); err != nil {
			// A log line states it; no engine ran it. It must not bound
			// the search (two billion sequences once took it forever)
			// nor skew the bytes per token.
			m.OutOfRange = append(m.OutOfRange, fmt.Sprintf("rung %d: %v", r.N, err))
			continue
		}
		rungs = append(rungs, r)
	}
	in := make([]Rung, len(rungs))
	for i, r := range rungs {
		in[i] = *r
	}
	m.BytesPerToken = kvBytesPerToken(in)
	for _, r := range rungs {
		if r.Boot == ClassOther {
			continue
		}
		p := m.pointOf(r.Shape)
		if p.seqs <= 0 || p.mml <= 0 {
			continue
		}
		p.r = r
		if b, ok := domain.ParseByteCount(r.AllocAtFailure); ok && r.FreeAtFailureBytes != nil {
			p.asked, p.free, p.hasOOM = b, *r.FreeAtFailureBytes, true
		}
		m.points = append(m.points, p)
		m.ref = r
		m.mmlCap = max(m.mmlCap, p.mml)
		m.seqsCap = max(m.seqsCap, p.seqs)
	}
	for _, p := range m.points {
		p.survivePass = p.r.Survive == ClassPass
		if !p.survivePass {
			continue
		}
		for _, d := range m.points {
			if d.r.Boot == ClassPass && d.r.Survive == ClassCapacityFail && d.settings == p.settings && le(d, p) {
				p.survivePass, p.overridden = false, d.r.N
				break
			}
		}
	}
	return m
}

// checkShape is domain.Shape.CheckLimits, and halogen's pinned pool
// (kv_pool_positions) held to the range of a pool in tokens.
func checkShape(s domain.Shape) error {
	if err := s.CheckLimits(); err != nil {
		return err
	}
	if v, ok := s.Float(shapeKVPoolPositions); ok {
		if err := domain.CheckShapeValue(domain.ShapeKVCacheTokens, v); err != nil {
			return fmt.Errorf("%s: %w", shapeKVPoolPositions, err)
		}
	}
	return nil
}

// settingsOf renders the other settings of a shape, for equality.
func settingsOf(s domain.Shape) string {
	var parts []string
	for _, k := range s.Keys() {
		if !notSettings[k] {
			parts = append(parts, k+"="+s.String(k))
		}
	}
	return strings.Join(parts, ", ")
}

// pointOf reads a shape's resources. The pool is the one the engine
// logged (kv_cache_tokens), else the pinned one (kv_cache_memory_bytes,
// kv_pool_positions); bytes and tokens convert through the dtype's bytes
// per token.
func (m *Model) pointOf(s domain.Shape) *point {
	p := &point{dtype: s.String(domain.ShapeKVCacheDtype), settings: settingsOf(s), memory: memoryOf(s).String()}
	p.seqs, _ = s.Int(domain.ShapeMaxNumSeqs)
	p.mml, _ = s.Int(domain.ShapeMaxModelLen)
	p.mnbt, _ = s.Int(domain.ShapeMaxNumBatchedTokens)
	bpt := m.BytesPerToken[p.dtype]
	if t, ok := s.Int(domain.ShapeKVCacheTokens); ok && t > 0 {
		p.poolTokens = t
	} else if t, ok := s.Int(shapeKVPoolPositions); ok && t > 0 {
		p.poolTokens = t
	}
	if b, ok := s.Int(domain.ShapeKVCacheMemoryBytes); ok && b > 0 {
		p.poolBytes = b
	}
	if p.poolTokens == 0 && p.poolBytes > 0 && bpt > 0 {
		p.poolTokens = int64(float64(p.poolBytes) / bpt)
	}
	if p.poolBytes == 0 && p.poolTokens > 0 && bpt > 0 {
		p.poolBytes = int64(math.Round(float64(p.poolTokens) * bpt))
	}
	return p
}

// memoryOf reads a shape's memory setting: the pinned pool first.
func memoryOf(s domain.Shape) Memory {
	if b, ok := s.Int(domain.ShapeKVCacheMemoryBytes); ok && b > 0 {
		return Memory{KVCacheMemoryBytes: b}
	}
	if u, ok := s.Float(domain.ShapeGPUMemoryUtilization); ok && u > 0 {
		return Memory{GPUMemoryUtilization: u}
	}
	return Memory{}
}

// cmpPool compares the pools of a and b: -1, 0, 1, and false when they
// cannot be compared (bytes unknown and dtypes differ, or a pool unknown).
func cmpPool(a, b *point) (int, bool) {
	var x, y int64
	switch {
	case a.poolBytes > 0 && b.poolBytes > 0:
		x, y = a.poolBytes, b.poolBytes
	case a.dtype == b.dtype && a.poolTokens > 0 && b.poolTokens > 0:
		x, y = a.poolTokens, b.poolTokens
	default:
		return 0, false
	}
	switch {
	case x < y:
		return -1, true
	case x > y:
		return 1, true
	}
	return 0, true
}

// mnbtOK tells whether a's max_num_batched_tokens is at most (dir < 0)
// or at least (dir > 0) b's. An open (unset) value on a proposal matches
// any; between rungs an unknown value matches only an unknown one.
func mnbtOK(a, b *point, dir int) bool {
	switch {
	case a.mnbt == 0 && a.r == nil:
		return true
	case a.mnbt == 0 || b.mnbt == 0:
		return a.mnbt == b.mnbt
	case dir < 0:
		return a.mnbt <= b.mnbt
	}
	return a.mnbt >= b.mnbt
}

// le tells whether a needs no more than b in every resource: KV pool,
// max_num_seqs, max_model_len, max_num_batched_tokens.
func le(a, b *point) bool {
	c, ok := cmpPool(a, b)
	return ok && c <= 0 && a.seqs <= b.seqs && a.mml <= b.mml && mnbtOK(a, b, -1)
}

// ge tells whether a needs at least as much as b in every resource.
func ge(a, b *point) bool {
	c, ok := cmpPool(a, b)
	return ok && c >= 0 && a.seqs >= b.seqs && a.mml >= b.mml && mnbtOK(a, b, 1)
}

func same(a, b *point) bool {
	c, ok := cmpPool(a, b)
	return ok && c == 0 && a.seqs == b.seqs && a.mml == b.mml && a.dtype == b.dtype && mnbtOK(a, b, -1) && mnbtOK(a, b, 1)
}

// Proposal builds the shape to predict from the sizing the operator
// proposes; the other settings are those of the ladder's latest rung that
// counts, except max_num_batched_tokens, which stays open. An empty dtype
// is that rung's dtype.
func (m *Model) Proposal(seqs, mml int64, dtype string, mem Memory) domain.Shape {
	s := domain.Shape{domain.ShapeMaxNumSeqs: seqs, domain.ShapeMaxModelLen: mml}
	if m.ref != nil {
		for k, v := range m.ref.Shape {
			if !notSettings[k] {
				s[k] = v
			}
		}
		if dtype == "" {
			dtype = m.ref.Shape.String(domain.ShapeKVCacheDtype)
		}
	}
	if dtype != "" {
		s[domain.ShapeKVCacheDtype] = dtype
	}
	if mem.KVCacheMemoryBytes > 0 {
		s[domain.ShapeKVCacheMemoryBytes] = mem.KVCacheMemoryBytes
	} else if mem.GPUMemoryUtilization > 0 {
		s[domain.ShapeGPUMemoryUtilization] = mem.GPUMemoryUtilization
	}
	return s
}

// WhatIf is Predict of Proposal.
func (m *Model) WhatIf(seqs, mml int64, dtype string, mem Memory) Prediction {
	return m.Predict(m.Proposal(seqs, mml, dtype, mem))
}

// Predict says whether the shape s boots and survives on this target. s
// is complete: its other settings are compared as they are (see
// Proposal to fill them from the ladder). Its KV pool is the one s
// logged (kv_cache_tokens), else its pinned pool (kv_cache_memory_bytes,
// kv_pool_positions), else the pool rungs at its gpu_memory_utilization
// got, else the pool that holds its contract.
func (m *Model) Predict(s domain.Shape) Prediction {
	return m.predict(s, false)
}

// predict is Predict; quiet leaves out flags, notes and reasons (decide).
func (m *Model) predict(s domain.Shape, quiet bool) Prediction {
	q := m.pointOf(s)
	q.quiet = quiet
	pr := Prediction{Target: m.Target, Engine: m.Engine, MaxNumSeqs: q.seqs, MaxModelLen: q.mml, KVDtype: q.dtype,
		Memory: memoryOf(s).String(), TokensNeeded: q.seqs * q.mml, Notes: []string{}}
	if !quiet {
		pr.Flags = SizingFlags(m.Engine, s)
	}
	if bpt, ok := m.BytesPerToken[q.dtype]; ok {
		pr.KVBytesPerToken = &bpt
	}
	if err := checkShape(s); err != nil {
		c := Call{Outcome: OutcomeUnknown, Rule: RuleOutOfRange, Reason: "unknown: " + err.Error()}
		pr.Boot, pr.Survive, pr.TokensNeeded = c, c, 0 // the product may have wrapped
		return pr
	}
	if q.seqs <= 0 || q.mml <= 0 {
		c := Call{Outcome: OutcomeUnknown, Rule: RuleNoEvidence, Reason: "unknown: max_num_seqs and max_model_len are needed"}
		pr.Boot, pr.Survive = c, c
		return pr
	}
	var pools []*point
	_, logged := s.Int(domain.ShapeKVCacheTokens)
	_, pinnedTokens := s.Int(shapeKVPoolPositions)
	mem := memoryOf(s)
	switch {
	case logged || pinnedTokens || mem.KVCacheMemoryBytes > 0:
		if q.poolTokens == 0 && q.poolBytes == 0 {
			pr.Notes = append(pr.Notes, "no KV bytes per token known for "+dtypeText(q.dtype)+": the pool's size in tokens is unknown")
		}
		pools = []*point{q}
	case mem.GPUMemoryUtilization > 0:
		pools = m.poolsAt(q, mem.GPUMemoryUtilization)
		if len(pools) == 0 {
			c := Call{Outcome: OutcomeUnknown, Rule: RuleNoEvidence, Reason: fmt.Sprintf(
				"unknown: no rung at these settings ran gpu_memory_utilization %s without a pinned pool, and the pool it gives (that fraction of the device minus weights, activations and graphs) needs the device total and the weights and activation memory, which the tracker does not capture",
				strconv.FormatFloat(mem.GPUMemoryUtilization, 'f', -1, 64))}
			pr.Boot, pr.Survive = c, c
			return pr
		}
	default:
		c := *q
		c.poolTokens = q.seqs * q.mml
		if bpt := m.BytesPerToken[q.dtype]; bpt > 0 {
			c.poolBytes = int64(math.Round(float64(c.poolTokens) * bpt))
		}
		pools = []*point{&c}
		pr.Notes = append(pr.Notes, "no memory setting: the KV pool is the one that holds the contract")
	}
	if len(pools) == 1 {
		p := pools[0]
		if p.poolTokens > 0 {
			pr.PoolTokens = &p.poolTokens
		}
		if p.poolBytes > 0 {
			pr.PoolBytes = &p.poolBytes
		}
		pr.Boot, pr.Survive = m.boot(p), Call{}
		pr.Survive = m.survive(p, pr.Boot)
		if p.poolTokens > 0 && p.poolTokens < pr.TokensNeeded && pr.Boot.Outcome != OutcomeFails && !quiet {
			pr.Notes = append(pr.Notes, fmt.Sprintf("the pool holds %d tokens, less than the contract of %d: at most %.2f requests of max_model_len at once", p.poolTokens, pr.TokensNeeded, float64(p.poolTokens)/float64(q.mml)))
		}
		return pr
	}
	// Several pools at one utilization: decided only when all agree.
	var boots, survives []Call
	var sizes []string
	for _, p := range pools {
		b := m.boot(p)
		boots = append(boots, b)
		survives = append(survives, m.survive(p, b))
		sizes = append(sizes, strconv.FormatInt(p.poolTokens, 10))
	}
	pr.Boot = agree(boots, sizes)
	pr.Survive = agree(survives, sizes)
	pr.Notes = append(pr.Notes, fmt.Sprintf("rungs at gpu_memory_utilization %s got pools of %s tokens (a setting outside the shape changes it)", strconv.FormatFloat(mem.GPUMemoryUtilization, 'f', -1, 64), strings.Join(sizes, ", ")))
	return pr
}

// agree returns the common outcome of calls made at several candidate
// pools, or unknown when they differ.
func agree(calls []Call, sizes []string) Call {
	for _, c := range calls[1:] {
		if c.Outcome != calls[0].Outcome {
			var parts []string
			for i, c := range calls {
				parts = append(parts, fmt.Sprintf("%s with %s tokens", c.Outcome, sizes[i]))
			}
			return Call{Outcome: OutcomeUnknown, Rule: RuleInconsistent, Reason: "unknown: the pool at this setting is not determined, and the outcome depends on it: " + strings.Join(parts, "; ")}
		}
	}
	return calls[0]
}

// poolsAt returns q with each distinct pool that rungs with q's settings
// got at utilization u without a pinned pool.
func (m *Model) poolsAt(q *point, u float64) []*point {
	want := Memory{GPUMemoryUtilization: u}.String()
	bpt := m.BytesPerToken[q.dtype]
	seen := map[int64]bool{}
	var out []*point
	for _, p := range m.points {
		if p.memory != want || p.settings != q.settings {
			continue
		}
		c := *q
		switch {
		case p.dtype == q.dtype && p.poolTokens > 0:
			c.poolTokens, c.poolBytes = p.poolTokens, p.poolBytes
		case p.poolBytes > 0 && bpt > 0:
			c.poolBytes, c.poolTokens = p.poolBytes, int64(float64(p.poolBytes)/bpt)
		default:
			continue
		}
		if !seen[c.poolTokens] {
			seen[c.poolTokens] = true
			out = append(out, &c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].poolTokens < out[j].poolTokens })
	return out
}

// evidence is one rung's say about a proposal.
type evidence struct {
	p      *point
	rule   string
	margin int64 // bytes beyond the limit (arithmetic rules)
	limit  int64
}

var failRank = map[string]int{RuleKVAllocFree: 0, RuleCaptureHeadroom: 1, RuleRuntimeHeadroom: 2, RuleSameShape: 3, RuleNoSmallerThanFailure: 4}

// failures returns the rungs that say q fails, for booting (survive false)
// or for surviving after a boot (survive true), the most telling first.
func (m *Model) failures(q *point, survive bool) []evidence {
	var out []evidence
	for _, p := range m.points {
		if p.settings != q.settings {
			continue
		}
		var fails bool
		if survive {
			fails = p.r.Boot == ClassPass && p.r.Survive == ClassCapacityFail
		} else {
			fails = p.r.Boot == ClassCapacityFail
		}
		if !fails {
			continue
		}
		switch {
		case p.r.Verdict == domain.VerdictKVCacheInsufficient:
			// A refusal for lack of KV cache: a pool no larger in tokens
			// with as long a max_model_len is refused too.
			if q.mml >= p.mml && p.poolTokens > 0 && q.poolTokens > 0 && q.poolTokens <= p.poolTokens {
				out = append(out, evidence{p: p, rule: RuleNoSmallerThanFailure})
			}
			continue
		case same(q, p):
			out = append(out, evidence{p: p, rule: RuleSameShape})
		case ge(q, p):
			out = append(out, evidence{p: p, rule: RuleNoSmallerThanFailure})
		}
		if !p.hasOOM || p.poolBytes <= 0 || q.poolBytes <= 0 || q.seqs < p.seqs || !mnbtOK(q, p, 1) {
			continue
		}
		var limit int64
		var rule string
		switch {
		case !survive && (p.r.Verdict == domain.VerdictOOMKVAlloc || p.r.Phase == domain.PhaseKVAlloc):
			// Free memory before the pool: what was free when the
			// allocation failed, plus what the pool had already taken
			// when the failing request was only part of it.
			limit, rule = p.free+max(0, p.poolBytes-p.asked), RuleKVAllocFree
		case !survive && p.r.Verdict == domain.VerdictOOMGraphCapture:
			// Capture memory follows the captured batch sizes (up to
			// max_num_seqs) and max_num_batched_tokens, not
			// max_model_len: a pool that leaves less than the capture
			// asked for fails.
			limit, rule = p.poolBytes-(p.asked-p.free), RuleCaptureHeadroom
		case survive && p.r.Verdict == domain.VerdictOOMRuntime && q.mml >= p.mml:
			limit, rule = p.poolBytes-(p.asked-p.free), RuleRuntimeHeadroom
		default:
			continue
		}
		if q.poolBytes > limit {
			out = append(out, evidence{p: p, rule: rule, margin: q.poolBytes - limit, limit: limit})
		}
	}
	front(out, func(a, b evidence) int {
		if c := cmp.Compare(failRank[a.rule], failRank[b.rule]); c != 0 {
			return c
		}
		return cmp.Compare(b.p.r.N, a.p.r.N)
	})
	return out
}

// front moves the first of es that orders first under c to index 0.
// Callers read the first and the set of the others (others), so a whole
// stable sort, most of a prediction's time on a ladder of 200 rungs and
// made a few hundred times per search, is not needed.
func front(es []evidence, c func(a, b evidence) int) {
	best := 0
	for i := 1; i < len(es); i++ {
		if c(es[i], es[best]) < 0 {
			best = i
		}
	}
	if best > 0 {
		e := es[best]
		copy(es[1:best+1], es[:best])
		es[0] = e
	}
}

// passes returns the rungs at least as large as q that booted (or stayed
// up), the closest first.
func (m *Model) passes(q *point, survive bool) []evidence {
	var out []evidence
	for _, p := range m.points {
		if p.settings != q.settings {
			continue
		}
		if (survive && !p.survivePass) || (!survive && p.r.Boot != ClassPass) {
			continue
		}
		switch {
		case same(q, p):
			out = append(out, evidence{p: p, rule: RuleSameShape})
		case le(q, p):
			out = append(out, evidence{p: p, rule: RuleNoLargerThanPass})
		}
	}
	front(out, func(a, b evidence) int {
		if (a.rule == RuleSameShape) != (b.rule == RuleSameShape) {
			if a.rule == RuleSameShape {
				return -1
			}
			return 1
		}
		if c, ok := cmpPool(a.p, b.p); ok && c != 0 {
			return c
		}
		if c := cmp.Compare(a.p.seqs*a.p.mml, b.p.seqs*b.p.mml); c != 0 {
			return c
		}
		return cmp.Compare(b.p.r.N, a.p.r.N)
	})
	return out
}

func (m *Model) boot(q *point) Call {
	if q.poolTokens > 0 && q.poolTokens < q.mml {
		if q.quiet {
			return Call{Outcome: OutcomeFails, Rule: RulePoolTooSmall}
		}
		return Call{Outcome: OutcomeFails, Rule: RulePoolTooSmall, Reason: fmt.Sprintf(
			"fails: a pool of %d tokens cannot hold one request of max_model_len %d", q.poolTokens, q.mml)}
	}
	return m.decide(q, m.failures(q, false), m.passes(q, false), false)
}

func (m *Model) survive(q *point, boot Call) Call {
	if boot.Outcome == OutcomeFails {
		c := boot
		c.Rule = RuleDoesNotBoot
		if !q.quiet {
			c.Reason = "fails: it does not boot (" + strings.TrimPrefix(boot.Reason, "fails: ") + ")"
		}
		return c
	}
	fails := m.failures(q, true)
	passes := m.passes(q, true)
	if len(fails) > 0 {
		// Dying under traffic outweighs staying up: fails, even when a
		// rung that stayed up was as large.
		return m.decide(q, fails, nil, true)
	}
	if boot.Outcome == OutcomeUnknown {
		c := boot
		if !q.quiet {
			c.Reason = "unknown: whether it boots is not decided (" + strings.TrimPrefix(boot.Reason, "unknown: ") + ")"
		}
		return c
	}
	return m.decide(q, nil, passes, true)
}

// decide turns evidence into a call.
func (m *Model) decide(q *point, fails, passes []evidence, survive bool) Call {
	if q.quiet {
		// The same outcomes and rules as below, without the reasons.
		switch {
		case len(fails) > 0 && len(passes) > 0:
			return Call{Outcome: OutcomeUnknown, Rule: RuleInconsistent}
		case len(fails) > 0:
			return Call{Outcome: OutcomeFails, Rule: fails[0].rule, Rung: fails[0].p.r.N}
		case len(passes) > 0:
			return Call{Outcome: OutcomeBoots, Rule: passes[0].rule, Rung: passes[0].p.r.N}
		}
		return Call{Outcome: OutcomeUnknown, Rule: RuleNoEvidence}
	}
	word := "booted"
	if survive {
		word = "stayed up"
	}
	switch {
	case len(fails) > 0 && len(passes) > 0:
		f, p := fails[0].p, passes[0].p
		return Call{Outcome: OutcomeUnknown, Rule: RuleInconsistent, Reason: fmt.Sprintf(
			"unknown: the rungs disagree: rung %d (%s) %s at least as large, while rung %d (%s) failed with %s at one no larger",
			p.r.N, pointText(p), word, f.r.N, pointText(f), f.r.Verdict)}
	case len(fails) > 0:
		e := fails[0]
		c := Call{Outcome: OutcomeFails, Rule: e.rule, Rung: e.p.r.N, Also: others(fails), Settings: openSettings(q, e.p)}
		c.Reason = m.failReason(q, e, survive)
		if e.limit != 0 || e.rule == RuleKVAllocFree {
			c.NeedBytes, c.LimitBytes = ptr(q.poolBytes), ptr(e.limit)
			c.AskedBytes, c.FreeBytes = ptr(e.p.asked), ptr(e.p.free)
		}
		return c
	case len(passes) > 0:
		e := passes[0]
		c := Call{Outcome: OutcomeBoots, Rule: e.rule, Rung: e.p.r.N, Also: others(passes), Settings: openSettings(q, e.p)}
		if e.rule == RuleSameShape {
			c.Reason = fmt.Sprintf("%s: rung %d ran the same shape (%s) and %s", OutcomeBoots, e.p.r.N, pointText(e.p), word)
		} else {
			c.Reason = fmt.Sprintf("%s: rung %d (%s) %s, and this shape is no larger in KV pool (%s), max_num_seqs, max_model_len or max_num_batched_tokens",
				OutcomeBoots, e.p.r.N, pointText(e.p), word, poolText(q))
		}
		return c
	}
	what := "booted"
	if survive {
		what = "stayed up (without a rung of the same size dying under traffic)"
	}
	return Call{Outcome: OutcomeUnknown, Rule: RuleNoEvidence, Reason: fmt.Sprintf(
		"unknown: at these settings no rung at least as large in KV pool (%s), max_num_seqs, max_model_len and max_num_batched_tokens %s, and no capacity failure was at or below this shape",
		poolText(q), what)}
}

func (m *Model) failReason(q *point, e evidence, survive bool) string {
	p := e.p
	switch e.rule {
	case RuleKVAllocFree:
		before := ""
		if e.limit != p.free {
			before = fmt.Sprintf(" (%s with what the pool had taken before)", gib(e.limit))
		}
		return fmt.Sprintf("fails: its KV pool needs %s (%s), more than the %s%s that were free when rung %d (%s) asked %s for its KV cache; this shape has as many or more sequences",
			gib(q.poolBytes), m.poolArith(q), gib(p.free), before, p.r.N, pointText(p), gib(p.asked))
	case RuleCaptureHeadroom, RuleRuntimeHeadroom:
		what := "graph capture"
		if e.rule == RuleRuntimeHeadroom {
			what = "serving"
		}
		return fmt.Sprintf("fails: rung %d (%s, pool %s) had %s free when %s asked %s, so a pool above %s leaves %s less than it asks; this pool is %s (%s), with as many or more sequences",
			p.r.N, pointText(p), gib(p.poolBytes), gib(p.free), what, gib(p.asked), gib(e.limit), what, gib(q.poolBytes), m.poolArith(q))
	case RuleSameShape:
		return fmt.Sprintf("fails: rung %d ran the same shape (%s) and failed with %s", p.r.N, pointText(p), p.r.Verdict)
	}
	return fmt.Sprintf("fails: rung %d (%s) failed with %s, and this shape is no smaller in KV pool (%s), max_num_seqs, max_model_len or max_num_batched_tokens",
		p.r.N, pointText(p), p.r.Verdict, poolText(q))
}

// poolArith renders how the pool's bytes come about: "1449984 tokens ×
// 7698 B/token (fp8)" or "pinned".
func (m *Model) poolArith(q *point) string {
	if bpt, ok := m.BytesPerToken[q.dtype]; ok && q.poolTokens > 0 {
		return fmt.Sprintf("%d tokens × %.0f B/token %s", q.poolTokens, bpt, dtypeText(q.dtype))
	}
	return "pinned"
}

// others are the rungs of es but the first, each once, ascending.
func others(es []evidence) []int {
	var out []int
	for _, e := range es[1:] {
		if e.p.r.N != es[0].p.r.N {
			out = append(out, e.p.r.N)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// openSettings names the deciding rung's max_num_batched_tokens when the
// proposal left it open.
func openSettings(q, p *point) map[string]string {
	if q.mnbt == 0 && p.mnbt > 0 {
		return map[string]string{domain.ShapeMaxNumBatchedTokens: strconv.FormatInt(p.mnbt, 10)}
	}
	return nil
}

func ptr(v int64) *int64 { return &v }

func dtypeText(dt string) string {
	switch dt {
	case "":
		return "(dtype not logged)"
	case "auto":
		return "auto (bf16)"
	}
	return dt
}

// pointText renders a rung's sizing: "6 × 241664 fp8".
func pointText(p *point) string {
	s := fmt.Sprintf("%d × %d", p.seqs, p.mml)
	if p.dtype == "auto" {
		return s + " bf16"
	}
	if p.dtype != "" {
		return s + " " + p.dtype
	}
	return s
}

func poolText(p *point) string {
	switch {
	case p.poolBytes > 0 && p.poolTokens > 0:
		return fmt.Sprintf("%d tokens, %s", p.poolTokens, gib(p.poolBytes))
	case p.poolBytes > 0:
		return gib(p.poolBytes)
	case p.poolTokens > 0:
		return fmt.Sprintf("%d tokens", p.poolTokens)
	}
	return "unknown"
}

// gib renders bytes as "10.40 GiB" (or MiB below 1 GiB, "0 bytes").
func gib(b int64) string {
	switch {
	case b == 0:
		return "0 bytes"
	case b < 0:
		return "-" + gib(-b)
	case b < 1<<30:
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

// Largest is LargestContext that cannot be cancelled (tests, callers
// without a request); the search is bounded all the same.
func (m *Model) Largest(dtype string, mem Memory) Largest {
	lg, _ := m.LargestContext(context.Background(), dtype, mem)
	return lg
}

// maxSearchWork bounds one search: predictions × (rungs + 16), as a
// prediction without its reasons costs a few µs plus a fraction of a µs
// per rung. It is about a tenth of a second of one core: the night
// ladder's search makes 46 predictions; a pinned pool of 3·2^30 tokens on
// a ladder of a million sequences (the staircase steps at every
// max_model_len of the grid) 24,393 of the 29,127 it allows with two
// rungs, and pools of 2^30 to 2^36 tokens there reach the bound.
const maxSearchWork = 1 << 19

// check refuses a memory setting no device has (domain.CheckShapeValue).
func (mem Memory) check() error {
	if mem.KVCacheMemoryBytes != 0 {
		if err := domain.CheckShapeValue(domain.ShapeKVCacheMemoryBytes, float64(mem.KVCacheMemoryBytes)); err != nil {
			return err
		}
	}
	if mem.GPUMemoryUtilization != 0 { // NaN too
		return domain.CheckShapeValue(domain.ShapeGPUMemoryUtilization, mem.GPUMemoryUtilization)
	}
	return nil
}

// LargestContext searches the engine's grid for the largest contract
// (max_num_seqs × max_model_len) predicted to boot and to survive at one
// KV dtype ("" = the latest rung's) and memory setting. max_model_len runs
// over multiples of the ladder's granularity up to the largest one tried
// (the model's own limit is not in the journal; at most 4096 steps),
// max_num_seqs up to the largest tried. With a pinned pool the contract
// must fit in the pool. On a tie the longer max_model_len wins.
//
// The answer is the one walking every shape gives, at a cost logarithmic
// in the shape: the shapes predicted to fit are a staircase (a shape no
// larger in sequences and context than one that fits fits too), so the
// longest max_model_len for a count is bisected, between the bounds its
// neighbours set, and the counts are bisected between the rungs' counts
// only where the staircase steps down and a larger contract is still
// possible. Past maxSearchWork it stops with the best found so far and
// says so in Reason.
//
// It returns an error wrapping domain.ErrOutOfRange for a memory setting
// beyond any device, and ctx's error, with what it found so far, when ctx
// ends first.
func (m *Model) LargestContext(ctx context.Context, dtype string, mem Memory) (Largest, error) {
	if dtype == "" && m.ref != nil {
		dtype = m.ref.Shape.String(domain.ShapeKVCacheDtype)
	}
	out := Largest{KVDtype: dtype, Memory: mem.String(), Granularity: m.Granularity, OutOfRange: m.OutOfRange}
	if err := mem.check(); err != nil {
		out.Reason = err.Error()
		return out, err
	}
	g := max(m.Granularity, 1)
	if m.mmlCap < g || m.seqsCap < 1 {
		out.Reason = "no rung with max_num_seqs and max_model_len to search from" + m.outOfRangeText()
		return out, nil
	}
	s := &staircase{m: m, ctx: ctx, dtype: dtype, mem: mem, g: g, steps: m.mmlCap / g, stride: 1,
		budget: maxSearchWork / (len(m.points) + 16), memo: map[[2]int64]uint8{}}
	if s.steps > 4096 {
		s.stride = (s.steps + 4095) / 4096
	}
	s.grid = (s.steps-1)/s.stride + 1
	for _, survive := range []bool{false, true} {
		n, i := s.largest(survive)
		if s.err != nil {
			return out, s.err
		}
		if n == 0 {
			continue
		}
		mml := s.mml(i)
		pr := m.WhatIf(n, mml, dtype, mem)
		call := pr.Boot
		if survive {
			call = pr.Survive
		}
		sh := m.Proposal(n, mml, dtype, mem)
		for k, v := range call.Settings {
			if x, err := strconv.ParseInt(v, 10, 64); err == nil {
				sh[k] = x
			}
		}
		f := &Fit{MaxNumSeqs: n, MaxModelLen: mml, ContractTokens: n * mml, Flags: SizingFlags(m.Engine, sh), Prediction: pr}
		if survive {
			out.Survive = f
		} else {
			out.Boot = f
		}
	}
	out.Reason = fmt.Sprintf("searched max_num_seqs 1..%d and max_model_len in steps of %d up to %d (the largest tried) with %d predictions",
		m.seqsCap, g*s.stride, m.mmlCap, s.calls)
	if s.stopped {
		out.Reason = fmt.Sprintf("stopped after %d predictions, the bound of one search: a larger contract than the one found may be untried", s.calls)
	}
	if out.Boot == nil {
		out.Reason += "; no shape is predicted to boot"
	}
	if out.Survive == nil {
		out.Reason += "; no shape is predicted to survive"
	}
	out.Reason += m.outOfRangeText()
	return out, nil
}

// outOfRangeText names the rungs left out of the model, for a Reason.
func (m *Model) outOfRangeText() string {
	if len(m.OutOfRange) == 0 {
		return ""
	}
	return "; left out, beyond any device: " + strings.Join(m.OutOfRange, "; ")
}

// staircase is one LargestContext search. Grid index i is max_model_len
// (steps - i×stride) × g: a larger index is a shorter context.
type staircase struct {
	m                      *Model
	ctx                    context.Context
	dtype                  string
	mem                    Memory
	g, steps, stride, grid int64
	// calls counts predictions, up to budget; stopped is set when the
	// budget ran out, err when ctx ended.
	calls, budget int
	stopped       bool
	err           error
	// memo holds each shape's outcome, so the survive search reuses the
	// boot search's predictions: bit 1 evaluated, 2 boots, 4 survives.
	memo    map[[2]int64]uint8
	survive bool
	// bestN and bestI are the best shape so far (bestN 0: none).
	bestN, bestI int64
}

func (s *staircase) mml(i int64) int64 { return (s.steps - i*s.stride) * s.g }

// fits tells whether n sequences at grid index i are predicted to boot
// (or survive) with a pool that holds the contract. Once the search must
// end it answers false without predicting, so every loop unwinds.
func (s *staircase) fits(n, i int64) bool {
	k := [2]int64{n, i}
	v, ok := s.memo[k]
	if !ok {
		if s.err != nil || s.stopped {
			return false
		}
		if s.calls%16 == 0 {
			if err := s.ctx.Err(); err != nil {
				s.err = err
				return false
			}
		}
		if s.calls >= s.budget {
			s.stopped = true
			return false
		}
		s.calls++
		mml := s.mml(i)
		pr := s.m.predict(s.m.Proposal(n, mml, s.dtype, s.mem), true)
		v = 1
		if pr.PoolTokens == nil || *pr.PoolTokens >= n*mml {
			if pr.Boot.Outcome == OutcomeBoots {
				v |= 2
			}
			if pr.Survive.Outcome == OutcomeBoots {
				v |= 4
			}
		}
		s.memo[k] = v
	}
	if s.survive {
		return v&4 != 0
	}
	return v&2 != 0
}

// first returns the smallest grid index in [lo, hi] whose context fits n
// sequences (the longest max_model_len), or grid when none does. The
// caller knows that lo-1 does not fit and that hi fits or is grid.
func (s *staircase) first(n, lo, hi int64) int64 {
	for lo < hi {
		mid := lo + (hi-lo)/2
		if s.fits(n, mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// better tells whether n sequences at grid index i beat the best so far:
// a larger contract, or as large with a longer context.
func (s *staircase) better(n, i int64) bool {
	if i >= s.grid {
		return false
	}
	if s.bestN == 0 {
		return true
	}
	c, bc := n*s.mml(i), s.bestN*s.mml(s.bestI)
	return c > bc || c == bc && s.mml(i) > s.mml(s.bestI)
}

// consider takes n at i when it is better and predicted to fit: where
// the rungs contradict the staircase, an index implied by a neighbour is
// checked before it is answered.
func (s *staircase) consider(n, i int64) {
	if s.better(n, i) && s.fits(n, i) {
		s.bestN, s.bestI = n, i
	}
}

// largest returns the best shape for booting (or surviving): n sequences
// at grid index i, n 0 when none fits.
func (s *staircase) largest(survive bool) (n, i int64) {
	s.survive, s.bestN, s.bestI = survive, 0, 0
	// The rungs' counts first: the staircase steps there, and a good
	// first answer prunes the bisection between them.
	seeds := []int64{1, s.m.seqsCap}
	for _, p := range s.m.points {
		seeds = append(seeds, p.seqs)
	}
	slices.Sort(seeds)
	seeds = slices.Compact(seeds)
	idx := make([]int64, len(seeds))
	prev := int64(0)
	for k, n := range seeds {
		idx[k] = s.first(n, prev, s.grid)
		s.consider(n, idx[k])
		prev = idx[k]
	}
	for k := 1; k < len(seeds); k++ {
		s.span(seeds[k-1], seeds[k], idx[k-1], idx[k])
	}
	return s.bestN, s.bestI
}

// span searches the counts strictly between a and b, whose indexes ia
// and ib are known. The staircase is flat where ia == ib (then b, already
// considered, is the best of it); a count below b with ia's context is
// the most any count between can reach, so where that does not beat the
// best the span is done. Depth is log2 of the span.
func (s *staircase) span(a, b, ia, ib int64) {
	if s.err != nil || s.stopped || b-a <= 1 || ia == ib || !s.better(b-1, ia) {
		return
	}
	mid := a + (b-a)/2
	im := s.first(mid, ia, ib)
	s.consider(mid, im)
	s.span(mid, b, im, ib)
	s.span(a, mid, ia, im)
}

// SizingFlags renders a shape's sizing (max_num_seqs, max_model_len,
// kv_cache_dtype, the memory setting, max_num_batched_tokens) as the
// engine's own flags: EngineFlags for the engines it knows (vLLM
// "--max-num-seqs 4 --max-model-len 262144 --kv-cache-dtype fp8", SGLang
// --max-running-requests/--context-length, llama.cpp --parallel/--ctx-size/
// --cache-type-k/-v), halogen's environment (HALOGEN_KV_SLOTS, HALOGEN_CTX,
// HALOGEN_KV_POOL_POSITIONS, HALOGEN_MAX_TOK), else shape key=value pairs.
// Other settings (tensor parallelism, eager mode) are left out: the
// prediction keeps them as the ladder ran them.
func SizingFlags(engine string, s domain.Shape) string {
	sizing := domain.Shape{}
	for _, k := range []string{domain.ShapeMaxNumSeqs, domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype,
		domain.ShapeMaxNumBatchedTokens, shapeKVPoolPositions} {
		if v, ok := s[k]; ok {
			sizing[k] = v
		}
	}
	// One memory setting: the pinned pool wins, as in the engine.
	if mem := memoryOf(s); mem.KVCacheMemoryBytes > 0 {
		sizing[domain.ShapeKVCacheMemoryBytes] = mem.KVCacheMemoryBytes
	} else if mem.GPUMemoryUtilization > 0 {
		sizing[domain.ShapeGPUMemoryUtilization] = mem.GPUMemoryUtilization
	}
	if f := EngineFlags(engine, sizing); f != "" {
		return f
	}
	seqs, _ := sizing.Int(domain.ShapeMaxNumSeqs)
	mml, _ := sizing.Int(domain.ShapeMaxModelLen)
	var f []string
	if engine == "halogen" {
		f = append(f, fmt.Sprintf("HALOGEN_KV_SLOTS=%d", seqs), fmt.Sprintf("HALOGEN_CTX=%d", mml))
		if p, ok := sizing.Int(shapeKVPoolPositions); ok {
			f = append(f, fmt.Sprintf("HALOGEN_KV_POOL_POSITIONS=%d", p))
		}
		if t, ok := sizing.Int(domain.ShapeMaxNumBatchedTokens); ok {
			f = append(f, fmt.Sprintf("HALOGEN_MAX_TOK=%d", t))
		}
		return strings.Join(f, " ")
	}
	for _, k := range []string{domain.ShapeMaxNumSeqs, domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype,
		domain.ShapeKVCacheMemoryBytes, domain.ShapeGPUMemoryUtilization, domain.ShapeMaxNumBatchedTokens} {
		if _, ok := sizing[k]; ok {
			f = append(f, k+"="+sizing.String(k))
		}
	}
	return strings.Join(f, " ")
}
