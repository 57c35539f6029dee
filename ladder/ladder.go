// Package ladder turns boot attempts into boot ladders: the sequence of
// shapes an operator boots, one after the other, while tuning one engine
// target on one host ("3 × 262144 bf16 OOMs at graph capture, 3 × 245760
// too, 3 × 237568 passes, +4096 → 241664 passes and wins").
//
// A ladder holds the attempts of one target (the same served_model_name,
// else the same unit family, else the same container family) on one host,
// in time order; a gap of Options.Gap without attempts starts a new ladder.
// Each attempt is a rung with the shape change against the previous rung,
// its outcome and derived figures. From the rungs the package derives the
// boundaries (highest passing and lowest failing value of a shape dimension
// while the other dimensions stay fixed, for booting and for surviving) and
// suggests the next rung by bisection.
//
// Units: token counts (max_model_len, KV tokens, contract size) are tokens,
// memory is bytes, durations are seconds. The package imports only domain
// and the standard library.
package ladder

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// Class is what a rung counts as for a boundary.
type Class string

// Classes of a rung.
const (
	// ClassPass: the rung reached ready (for the survivable boundary: and
	// did not die of it).
	ClassPass Class = "pass"
	// ClassCapacityFail: the rung failed for lack of memory or KV cache
	// (oom_profile, oom_kv_alloc, oom_graph_capture, oom_runtime,
	// kv_cache_insufficient; for surviving also boot_not_survivable).
	ClassCapacityFail Class = "capacity_fail"
	// ClassOther: neither, e.g. a compile or config failure, an operator
	// stop, a rung still booting. It does not count for boundaries.
	ClassOther Class = "other"
)

// CapacityVerdicts are the verdicts that say the shape did not fit the
// device. oom_weights is not one of them: the weights alone do not fit,
// whatever the context size.
var CapacityVerdicts = []domain.Verdict{
	domain.VerdictOOMProfile, domain.VerdictOOMKVAlloc, domain.VerdictOOMGraphCapture,
	domain.VerdictOOMRuntime, domain.VerdictKVCacheInsufficient,
}

// IsCapacity reports whether v is one of CapacityVerdicts.
func IsCapacity(v domain.Verdict) bool {
	for _, c := range CapacityVerdicts {
		if v == c {
			return true
		}
	}
	return false
}

// DimContract is the contract size dimension: max_num_seqs × max_model_len,
// in tokens (what the engine promises to hold at once).
const DimContract = "contract_tokens"

// DefaultGranularity is the KV block granularity, in tokens, that
// suggestions of max_model_len and contract size are rounded down to.
const DefaultGranularity int64 = 4096

// DefaultGap is the time without attempts after which a new ladder starts.
const DefaultGap = 6 * time.Hour

// Options configures Build. The zero value uses the defaults.
type Options struct {
	// Gap without attempts of a target that starts a new ladder; default
	// DefaultGap (6 h). It is measured from the latest end (or start, when
	// the end is unknown) of the ladder's attempts to the next start.
	Gap time.Duration
	// Granularity is the block granularity in tokens per engine family
	// ("vllm", "sglang", ...); engines not listed use DefaultGranularity.
	Granularity map[string]int64
	// DefaultGranularity overrides the package's DefaultGranularity (4096
	// tokens) when positive.
	DefaultGranularity int64
}

func (o Options) gap() time.Duration {
	if o.Gap > 0 {
		return o.Gap
	}
	return DefaultGap
}

// granularity returns the block granularity, in tokens, of an engine.
func (o Options) granularity(engine string) int64 {
	if g, ok := o.Granularity[engine]; ok && g > 0 {
		return g
	}
	if o.DefaultGranularity > 0 {
		return o.DefaultGranularity
	}
	return DefaultGranularity
}

// Change is one shape key that differs from the previous rung. From or To
// is nil when the key was absent on that side. The pseudo-key "unit" tells
// that the rung ran under another unit (a probe unit, then production).
type Change struct {
	Key  string `json:"key"`
	From any    `json:"from"`
	To   any    `json:"to"`
}

// String renders the change the way operators write it:
// "max_model_len 262144 → 245760"; an absent side is "—".
func (c Change) String() string {
	return c.Key + " " + valueText(c.From) + " → " + valueText(c.To)
}

func valueText(v any) string {
	if v == nil {
		return "—"
	}
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// Rung is one attempt of a ladder.
type Rung struct {
	// N is the rung's position in its ladder, from 1, in time order.
	N         int       `json:"n"`
	AttemptID string    `json:"attempt_id"`
	Unit      string    `json:"unit,omitempty"`
	Container string    `json:"container,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Shape is the attempt's shape; Summary its operator form
	// ("3 × 262144 bf16 KV 11.05 GB 798280 KV tokens").
	Shape   domain.Shape `json:"shape"`
	Summary string       `json:"summary"`
	// Diff holds the shape keys that differ from the previous rung (empty
	// for the first rung). Outcome keys (kv_cache_tokens, max_concurrency)
	// are left out: they are what the engine computed, not what was set.
	Diff     []Change       `json:"diff"`
	Verdict  domain.Verdict `json:"verdict"`
	Phase    domain.Phase   `json:"phase"`
	Findings []string       `json:"findings"`
	// ReachedReady tells whether the engine reported readiness.
	ReachedReady bool `json:"reached_ready"`
	// Boot is the rung's class for the boot boundary: pass when it reached
	// ready. Survive is its class for the survivable boundary: a rung that
	// reached ready and then died (boot_not_survivable, or a capacity
	// verdict such as oom_runtime) fails it. Class is the overall outcome,
	// equal to Survive.
	Boot    Class `json:"boot"`
	Survive Class `json:"survive"`
	Class   Class `json:"class"`
	// ClassNote says why the rung is what it is when that is not obvious
	// ("dynamo_constraint_violation is not a capacity failure: ...").
	ClassNote string `json:"class_note,omitempty"`
	// SecondsToReady is the time from start to ready, in seconds; nil when
	// it never got ready or the start is unknown.
	SecondsToReady *float64 `json:"seconds_to_ready,omitempty"`
	// SecondsToFailure is the time from start to the failure (the verdict's
	// decisive line, else the end), in seconds; nil unless it failed.
	SecondsToFailure *float64 `json:"seconds_to_failure,omitempty"`
	// KVTokens is the KV cache size in tokens (shape kv_cache_tokens).
	KVTokens *int64 `json:"kv_cache_tokens,omitempty"`
	// Concurrency is how many requests of max_model_len tokens fit at once
	// (shape max_concurrency).
	Concurrency *float64 `json:"max_concurrency,omitempty"`
	// KVDtype is the KV cache dtype ("auto" = the model's dtype).
	KVDtype string `json:"kv_cache_dtype,omitempty"`
	// KVBytesPerToken is kv_cache_memory_bytes / kv_cache_tokens, in bytes
	// per token (per rank, as the engine reports the pool).
	KVBytesPerToken *float64 `json:"kv_bytes_per_token,omitempty"`
	// FreeAtFailure is the device memory free when the OOM struck, as the
	// OOM line states it ("96.00 MiB", "0 bytes"); FreeAtFailureBytes is
	// the same in bytes. AllocAtFailure is what the engine tried to
	// allocate ("162.00 MiB").
	FreeAtFailure      string `json:"free_at_failure,omitempty"`
	FreeAtFailureBytes *int64 `json:"free_at_failure_bytes,omitempty"`
	AllocAtFailure     string `json:"alloc_at_failure,omitempty"`
	// Note places the rung in its ladder (see RungNote).
	Note string `json:"note"`
}

// Outcome is the rung's result in a word or two: "pass", "capacity fail",
// "boots, dies" (passes the boot boundary, fails the survivable one) or
// "other" (counts for no boundary).
func (r Rung) Outcome() string {
	switch {
	case r.Boot == ClassPass && r.Survive == ClassCapacityFail:
		return "boots, dies"
	case r.Class == ClassPass:
		return "pass"
	case r.Class == ClassCapacityFail:
		return "capacity fail"
	}
	return "other"
}

// Boundary is what a ladder learned about one shape dimension while the
// other dimensions stayed fixed (At), for booting (Kind "boot") or for
// surviving (Kind "survive").
type Boundary struct {
	// Dimension is max_model_len (tokens), max_num_seqs (sequences) or
	// contract_tokens (max_num_seqs × max_model_len, tokens).
	Dimension string `json:"dimension"`
	// Kind is "boot" or "survive".
	Kind string `json:"kind"`
	// At holds the fixed keys (the other dimensions and kv_cache_dtype;
	// tensor_parallel_size, quantization, enforce_eager, speculative and
	// model only when they vary within the ladder). AtText renders them:
	// "max_num_seqs=3, kv_cache_dtype=auto".
	At     map[string]string `json:"at"`
	AtText string            `json:"at_text"`
	// Pass is the highest value that passed, first seen at rung PassRung;
	// Fail the lowest value that failed for capacity, first seen at rung
	// FailRung. Either is nil when no rung passed / failed.
	Pass     *int64 `json:"pass,omitempty"`
	PassRung int    `json:"pass_rung,omitempty"`
	Fail     *int64 `json:"fail,omitempty"`
	FailRung int    `json:"fail_rung,omitempty"`
	// FailVerdict is the verdict of rung FailRung.
	FailVerdict domain.Verdict `json:"fail_verdict,omitempty"`
	// Status: "open" (a rung between Pass and Fail is worth booting),
	// "found" (the step is below the granularity), "inconsistent" (a value
	// failed at or below one that passed), "no_failure" or "no_pass".
	Status string `json:"status"`
	// Granularity is the step, in the dimension's unit, that suggestions
	// are rounded down to (the engine's block size for token dimensions, 1
	// for max_num_seqs).
	Granularity int64 `json:"granularity"`
	// Next is the suggested next value when Status is "open": the
	// bisection midpoint rounded down to a multiple of Granularity (up,
	// when rounding down lands on Pass); NextShape is the rung to boot
	// ("5 × 233472 fp8"). A contract size is split into max_num_seqs of the
	// pass or fail rung and a max_model_len no larger than the ladder's
	// largest (the model's limit is not in the journal).
	Next      *int64       `json:"next,omitempty"`
	NextShape string       `json:"next_shape,omitempty"`
	nextRung  domain.Shape // the shape keys NextShape sums up
	// Reason says why a boundary is "found": no value on the grid lies
	// strictly between Pass and Fail.
	Reason string `json:"reason,omitempty"`
	// Excluded lists rungs in this context that failed for another reason
	// than capacity and were not counted.
	Excluded []int `json:"excluded,omitempty"`
	// Overridden lists rungs (survivable boundary only) that stayed up at
	// a value where another rung of the context reached ready and then
	// died: dying under traffic outweighs a boot that was stopped early.
	Overridden []int `json:"overridden,omitempty"`
	// Note is the boundary in one sentence.
	Note string `json:"note"`
}

// Suggestion is the ladder's suggested next rung.
type Suggestion struct {
	// Found is true when every boundary is narrower than the granularity:
	// there is nothing left to bisect.
	Found bool `json:"found"`
	// Dimension, Kind and At name the boundary the suggestion bisects.
	Dimension string `json:"dimension,omitempty"`
	Kind      string `json:"kind,omitempty"`
	At        string `json:"at,omitempty"`
	// Value is the suggested value of Dimension; Shape the rung to boot.
	Value *int64 `json:"value,omitempty"`
	Shape string `json:"shape,omitempty"`
	// Rung holds the shape keys of the rung to boot; Flags is it as the
	// engine's own command-line flags (EngineFlags), "" when unknown.
	Rung  domain.Shape `json:"rung,omitempty"`
	Flags string       `json:"flags,omitempty"`
	// Text is the suggestion in one sentence, to follow "next rung: "
	// (Shape set), "boundary found: " (Found) or stand alone (neither):
	// "5 × 233472 fp8 (contract_tokens 1167360), the midpoint of ...".
	Text string `json:"text"`
}

// Ladder is the sequence of attempts of one engine target on one host.
type Ladder struct {
	// ID is stable: a hash of host, target and the first attempt's id.
	ID   string `json:"id"`
	Host string `json:"host"`
	// Target is the served_model_name, else the unit family, else the
	// container family; TargetFrom says which ("served_model_name",
	// "unit", "container", "engine").
	Target     string `json:"target"`
	TargetFrom string `json:"target_from"`
	// Engine is the engine family of the rungs (the most common one).
	Engine string `json:"engine"`
	// Units are the units the rungs ran under, in order of first use.
	Units     []string  `json:"units"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// EndedAt is the latest end (or start) of the rungs.
	EndedAt time.Time `json:"ended_at,omitzero"`
	// Granularity is the engine's block granularity in tokens.
	Granularity int64 `json:"granularity"`
	// Passes, CapacityFails and Others count the rungs by Class.
	Passes        int `json:"passes"`
	CapacityFails int `json:"capacity_fails"`
	Others        int `json:"others"`
	// KVBytesPerToken is the median KV bytes per token, per KV dtype.
	KVBytesPerToken map[string]float64 `json:"kv_bytes_per_token,omitempty"`
	Rungs           []Rung             `json:"rungs"`
	Boundaries      []Boundary         `json:"boundaries"`
	Next            *Suggestion        `json:"next,omitempty"`
	Notes           []string           `json:"notes"`
}

// Rung returns rung n (from 1), or nil.
func (l *Ladder) Rung(n int) *Rung {
	if n < 1 || n > len(l.Rungs) {
		return nil
	}
	return &l.Rungs[n-1]
}

// Boundary returns the boundary of dim and kind whose fixed keys include
// every key=value of at, or nil.
func (l *Ladder) Boundary(dim, kind string, at map[string]string) *Boundary {
	for i := range l.Boundaries {
		b := &l.Boundaries[i]
		if b.Dimension != dim || b.Kind != kind {
			continue
		}
		ok := true
		for k, v := range at {
			if b.At[k] != v {
				ok = false
			}
		}
		if ok {
			return b
		}
	}
	return nil
}

// Find returns the ladder with that id, or nil.
func Find(ls []Ladder, id string) *Ladder {
	for i := range ls {
		if ls[i].ID == id {
			return &ls[i]
		}
	}
	return nil
}

// ForAttempt returns the ladder and rung of an attempt, or nils.
func ForAttempt(ls []Ladder, attemptID string) (*Ladder, *Rung) {
	for i := range ls {
		for j := range ls[i].Rungs {
			if ls[i].Rungs[j].AttemptID == attemptID {
				return &ls[i], &ls[i].Rungs[j]
			}
		}
	}
	return nil, nil
}

// outcomeKeys are shape keys the engine computes; they are not part of a
// rung's diff.
var outcomeKeys = map[string]bool{domain.ShapeKVCacheTokens: true, domain.ShapeMaxConcurrency: true}

// keyOrder puts the sizing keys first in diffs.
var keyOrder = []string{
	domain.ShapeMaxNumSeqs, domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype,
	domain.ShapeKVCacheMemoryBytes, domain.ShapeGPUMemoryUtilization, domain.ShapeMaxNumBatchedTokens,
}

// Build groups attempts into ladders, newest ladder first. Attempts may
// come in any order; the rungs of a ladder are in start order (attempts
// with an unknown start first, in their input order).
func Build(attempts []*domain.Attempt, opt Options) []Ladder { return BuildMemo(attempts, opt, nil) }

// Memo keeps the ladders of the previous BuildMemo by what they were built
// from (host, target and the very attempts), so that a build after a few
// attempts changed builds only their ladders again and reuses the rest. A
// changed attempt must be a new *domain.Attempt; the memo holds the
// attempts it keeps ladders of, so their addresses are not reused. Not safe
// for concurrent use.
type Memo struct {
	prev, next map[string]memoEntry
	// facts are what a build reads of each attempt, by address: reading
	// them from every attempt (its shape above all) was most of a
	// rebuild's time. The keys keep the attempts alive, so an address
	// always names the same attempt.
	facts map[*domain.Attempt]facts
	// Built and Reused count the ladders of the last build.
	Built, Reused int
}

// facts are the fields of an attempt a build groups it by.
type facts struct {
	host, unit, container, engine string
	// name is the attempt's served_model_name.
	name           string
	started, ended time.Time
}

func factsOf(a *domain.Attempt) facts {
	return facts{host: a.Host, unit: a.Unit, container: a.Container, engine: a.Engine,
		name: a.Shape.String(domain.ShapeServedModelName), started: a.StartedAt, ended: a.EndedAt}
}

// factsOf returns the facts of each attempt (zero for nil), from the memo
// when it has them (nil m: none).
func (m *Memo) factsOf(attempts []*domain.Attempt) []facts {
	out := make([]facts, len(attempts))
	if m == nil {
		for i, a := range attempts {
			if a != nil {
				out[i] = factsOf(a)
			}
		}
		return out
	}
	// Forget the attempts no longer built from once they are as many as
	// those that are.
	if m.facts == nil || len(m.facts) > 2*len(attempts)+64 {
		old := m.facts
		m.facts = make(map[*domain.Attempt]facts, len(attempts))
		for _, a := range attempts {
			if f, ok := old[a]; ok && a != nil {
				m.facts[a] = f
			}
		}
	}
	for i, a := range attempts {
		if a == nil {
			continue
		}
		f, ok := m.facts[a]
		if !ok {
			f = factsOf(a)
			m.facts[a] = f
		}
		out[i] = f
	}
	return out
}

type memoEntry struct {
	l  Ladder
	as []*domain.Attempt
}

func (m *Memo) ladder(host string, t target, as []*domain.Attempt, opt Options) Ladder {
	if m == nil {
		return build(host, t.name, t.from, as, opt)
	}
	// Keyed by what names the ladder; the attempts themselves are compared
	// by address: printing every address into the key was a third of a
	// rebuild's time.
	key := host + "\x00" + t.name + "\x00" + t.from + "\x00" + as[0].ID
	e, ok := m.prev[key]
	if ok && slices.Equal(e.as, as) {
		m.Reused++
	} else {
		e = memoEntry{l: build(host, t.name, t.from, as, opt), as: append([]*domain.Attempt(nil), as...)}
		m.Built++
	}
	m.next[key] = e
	return e.l
}

// BuildMemo is Build reusing the ladders memo holds from the previous
// build (nil: none). The result is Build's.
func BuildMemo(attempts []*domain.Attempt, opt Options, memo *Memo) []Ladder {
	if memo != nil {
		memo.next, memo.Built, memo.Reused = map[string]memoEntry{}, 0, 0
		defer func() { memo.prev, memo.next = memo.next, nil }()
	}
	fs := memo.factsOf(attempts)
	targets := resolveTargets(attempts, fs)
	type key struct{ host, target string }
	groups := map[key][]int{} // indexes into attempts
	var order []key
	for i, a := range attempts {
		if a == nil {
			continue
		}
		k := key{fs[i].host, targets[i].name}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	var out []Ladder
	for _, k := range order {
		idx := groups[k]
		sort.SliceStable(idx, func(i, j int) bool { return fs[idx[i]].started.Before(fs[idx[j]].started) })
		var cur []*domain.Attempt
		var curTarget target
		var last time.Time
		flush := func() {
			if len(cur) > 0 {
				out = append(out, memo.ladder(k.host, curTarget, cur, opt))
			}
			cur = nil
		}
		for _, i := range idx {
			f := fs[i]
			if len(cur) > 0 && !last.IsZero() && !f.started.IsZero() && f.started.Sub(last) > opt.gap() {
				flush()
			}
			if len(cur) == 0 {
				curTarget = targets[i]
			}
			cur = append(cur, attempts[i])
			for _, t := range []time.Time{f.started, f.ended} {
				if t.After(last) {
					last = t
				}
			}
		}
		flush()
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.After(out[j].StartedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

type target struct{ name, from string }

var (
	probeSuffix = regexp.MustCompile(`[-_.]probe(?:[-_.]?\d+)?$`)
	unitSuffix  = regexp.MustCompile(`\.(?:service|scope)$`)
	idSuffix    = regexp.MustCompile(`[-_.](?:\d+|[0-9a-f]{8,})$`)
)

// Family strips what differs between the units of one target:
// ".service", a "@instance" and a "-probe" (or "-probe-2") suffix.
// "frank-primary-probe.service" and "frank-primary.service" are both
// "frank-primary".
func Family(unit string) string {
	unit = unitSuffix.ReplaceAllString(unit, "")
	if i := strings.IndexByte(unit, '@'); i > 0 {
		unit = unit[:i]
	}
	return probeSuffix.ReplaceAllString(unit, "")
}

// ContainerFamily is Family for container names, which may also end in a
// numeric or hex suffix ("frank-primary-probe-2", "vllm-3fa9c2e1d0").
func ContainerFamily(name string) string {
	return Family(idSuffix.ReplaceAllString(name, ""))
}

// resolveTargets names each attempt's target, by index (fs are their
// facts). An attempt without a served_model_name (it died before printing
// its arguments) takes the name other attempts of the same host and unit
// (or container) reported.
func resolveTargets(attempts []*domain.Attempt, fs []facts) []target {
	type hostKey struct{ host, name string }
	byUnit := map[hostKey]string{}
	byContainer := map[hostKey]string{}
	for i, a := range attempts {
		if a == nil {
			continue
		}
		if f := fs[i]; f.name != "" {
			if f.unit != "" {
				byUnit[hostKey{f.host, f.unit}] = f.name
			}
			if f.container != "" {
				byContainer[hostKey{f.host, f.container}] = f.name
			}
		}
	}
	// Family and ContainerFamily run regexps; names repeat.
	units, containers := map[string]string{}, map[string]string{}
	out := make([]target, len(attempts))
	for i, a := range attempts {
		if a == nil {
			continue
		}
		f := fs[i]
		var t target
		switch {
		case f.name != "":
			t = target{f.name, domain.ShapeServedModelName}
		case f.unit != "" && byUnit[hostKey{f.host, f.unit}] != "":
			t = target{byUnit[hostKey{f.host, f.unit}], domain.ShapeServedModelName}
		case f.container != "" && byContainer[hostKey{f.host, f.container}] != "":
			t = target{byContainer[hostKey{f.host, f.container}], domain.ShapeServedModelName}
		case f.unit != "":
			t = target{memo(units, f.unit, Family), "unit"}
		case f.container != "":
			t = target{memo(containers, f.container, ContainerFamily), "container"}
		default:
			e := f.engine
			if e == "" {
				e = "unknown"
			}
			t = target{"(unnamed " + e + ")", "engine"}
		}
		out[i] = t
	}
	return out
}

// ladderID is a stable id: host, target and first attempt id hashed.
func ladderID(host, target, firstAttempt string) string {
	h := sha256.Sum256([]byte(host + "\x00" + target + "\x00" + firstAttempt))
	return hex.EncodeToString(h[:8])
}

func build(host, tgt, from string, as []*domain.Attempt, opt Options) Ladder {
	l := Ladder{
		ID: ladderID(host, tgt, as[0].ID), Host: host, Target: tgt, TargetFrom: from,
		Units: []string{}, Rungs: []Rung{}, Boundaries: []Boundary{}, Notes: []string{},
	}
	engines := map[string]int{}
	seenUnit := map[string]bool{}
	for i, a := range as {
		engines[a.Engine]++
		if a.Unit != "" && !seenUnit[a.Unit] {
			seenUnit[a.Unit] = true
			l.Units = append(l.Units, a.Unit)
		}
		r := newRung(i+1, a)
		if i > 0 {
			r.Diff = diff(as[i-1], a)
		}
		l.Rungs = append(l.Rungs, r)
		if l.StartedAt.IsZero() || (!a.StartedAt.IsZero() && a.StartedAt.Before(l.StartedAt)) {
			l.StartedAt = a.StartedAt
		}
		for _, t := range []time.Time{a.StartedAt, a.EndedAt} {
			if t.After(l.EndedAt) {
				l.EndedAt = t
			}
		}
	}
	best := 0
	for e, n := range engines {
		if n > best || (n == best && e < l.Engine) {
			l.Engine, best = e, n
		}
	}
	l.Granularity = opt.granularity(l.Engine)
	for _, r := range l.Rungs {
		switch r.Class {
		case ClassPass:
			l.Passes++
		case ClassCapacityFail:
			l.CapacityFails++
		default:
			l.Others++
		}
	}
	l.KVBytesPerToken = kvBytesPerToken(l.Rungs)
	l.Boundaries = boundaries(&l)
	l.Next = suggest(&l)
	for i := range l.Rungs {
		l.Rungs[i].Note = RungNote(&l, i+1)
	}
	l.Notes = ladderNotes(&l)
	return l
}

func newRung(n int, a *domain.Attempt) Rung {
	shape := a.Shape
	if shape == nil {
		shape = domain.Shape{}
	}
	r := Rung{
		N: n, AttemptID: a.ID, Unit: a.Unit, Container: a.Container, StartedAt: a.StartedAt, EndedAt: a.EndedAt,
		Shape: shape, Summary: shape.Summary(), Diff: []Change{}, Verdict: a.Verdict, Phase: a.Phase,
		Findings: a.FindingIDs(), KVDtype: shape.String(domain.ShapeKVCacheDtype),
	}
	r.ReachedReady = !a.ReadyAt.IsZero() || a.Verdict == domain.VerdictReady
	r.Boot, r.Survive, r.ClassNote = classify(a, r.ReachedReady)
	r.Class = r.Survive
	if !a.StartedAt.IsZero() && !a.ReadyAt.IsZero() {
		s := a.ReadyAt.Sub(a.StartedAt).Seconds()
		r.SecondsToReady = &s
	}
	if a.Verdict.IsFailure() && !a.StartedAt.IsZero() {
		at := a.EndedAt
		for _, f := range a.Findings {
			if f.ID == string(a.Verdict) && !f.Time.IsZero() {
				at = f.Time
				break
			}
		}
		if !at.IsZero() {
			s := at.Sub(a.StartedAt).Seconds()
			r.SecondsToFailure = &s
		}
	}
	if t, ok := shape.Int(domain.ShapeKVCacheTokens); ok {
		r.KVTokens = &t
	}
	if c, ok := shape.Float(domain.ShapeMaxConcurrency); ok {
		r.Concurrency = &c
	}
	if b, ok := shape.Int(domain.ShapeKVCacheMemoryBytes); ok && r.KVTokens != nil && *r.KVTokens > 0 {
		v := float64(b) / float64(*r.KVTokens)
		r.KVBytesPerToken = &v
	}
	r.FreeAtFailure, r.AllocAtFailure = failureCaptures(a)
	if b, ok := domain.ParseByteCount(r.FreeAtFailure); ok {
		r.FreeAtFailureBytes = &b
	}
	return r
}

// classify returns the boot and survive classes and, when useful, why.
func classify(a *domain.Attempt, ready bool) (boot, survive Class, note string) {
	v := a.Verdict
	switch {
	case ready:
		boot = ClassPass
	case IsCapacity(v):
		return ClassCapacityFail, ClassCapacityFail, ""
	default:
		switch v {
		case domain.VerdictRunning, "":
			note = "still booting: neither a pass nor a capacity failure"
		case domain.VerdictStopped:
			note = "stopped before ready: neither a pass nor a capacity failure"
		case domain.VerdictOOMWeights:
			note = "oom_weights is not a capacity failure of the shape: the weights alone do not fit, whatever the context size; not counted for boundaries"
		case domain.VerdictDynamoConstraint, domain.VerdictCompileError:
			note = string(v) + " is not a capacity failure: a compile failure says nothing about memory; not counted for boundaries"
		default:
			note = string(v) + " is not a capacity failure; not counted for boundaries"
		}
		return ClassOther, ClassOther, note
	}
	switch {
	case a.HasFinding(domain.FindingBootNotSurvivable):
		return boot, ClassCapacityFail, "boots but died within the survivability window (" + string(v) + ", boot_not_survivable): passes the boot boundary, fails the survivable one"
	case IsCapacity(v):
		return boot, ClassCapacityFail, "boots but later died of " + string(v) + ": passes the boot boundary, fails the survivable one"
	case v.IsFailure():
		return boot, ClassOther, "boots, then died of " + string(v) + ", which is not a capacity failure: not counted for the survivable boundary"
	}
	return boot, ClassPass, ""
}

// failureCaptures returns the free and alloc captures of the OOM line:
// the verdict's finding first, then any finding that has them.
func failureCaptures(a *domain.Attempt) (free, alloc string) {
	for pass := 0; pass < 2; pass++ {
		for _, f := range a.Findings {
			if pass == 0 && f.ID != string(a.Verdict) {
				continue
			}
			if free == "" {
				free = f.Captures["free"]
			}
			if alloc == "" {
				alloc = f.Captures["alloc"]
			}
		}
	}
	return free, alloc
}

// diff lists the set shape keys that differ between two attempts, plus the
// pseudo-key "unit" when the unit changed.
func diff(prev, cur *domain.Attempt) []Change {
	out := []Change{}
	if prev.Unit != cur.Unit && prev.Unit != "" && cur.Unit != "" {
		out = append(out, Change{Key: "unit", From: prev.Unit, To: cur.Unit})
	}
	return append(out, shapeDiff(prev.Shape, cur.Shape, nil)...)
}

// orderedKeys returns the union of the shapes' keys, sizing keys first.
func orderedKeys(shapes ...domain.Shape) []string {
	seen := map[string]bool{}
	var rest []string
	for _, s := range shapes {
		for k := range s {
			if !seen[k] {
				seen[k] = true
				rest = append(rest, k)
			}
		}
	}
	var out []string
	for _, k := range keyOrder {
		if seen[k] {
			out = append(out, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		if !slices.Contains(keyOrder, k) {
			out = append(out, k)
		}
	}
	return out
}

func kvBytesPerToken(rungs []Rung) map[string]float64 {
	per := map[string][]float64{}
	for _, r := range rungs {
		if r.KVBytesPerToken != nil {
			dt := r.KVDtype
			if dt == "" {
				dt = "unknown"
			}
			per[dt] = append(per[dt], *r.KVBytesPerToken)
		}
	}
	if len(per) == 0 {
		return nil
	}
	out := map[string]float64{}
	for dt, vs := range per {
		sort.Float64s(vs)
		m := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		out[dt] = m
	}
	return out
}

// memo returns fn(k), computed once per k in m.
func memo(m map[string]string, k string, fn func(string) string) string {
	v, ok := m[k]
	if !ok {
		v = fn(k)
		m[k] = v
	}
	return v
}
