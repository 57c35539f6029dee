package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ladder"
	"github.com/llmfleet/analyzer/progress"
)

// predictParams are the query parameters of GET
// /api/v1/ladders/:id/predict and of the ladder page's what-if form:
// max_num_seqs (sequences) and max_model_len (tokens) are required;
// kv_cache_dtype defaults to the latest rung's; at most one of
// kv_cache_memory_bytes (bytes per rank, or a size such as "9.68 GiB") and
// gpu_memory_utilization (0..1]; with neither the KV pool is the one that
// holds the contract.
var predictParams = []string{
	domain.ShapeMaxNumSeqs, domain.ShapeMaxModelLen, domain.ShapeKVCacheDtype,
	domain.ShapeKVCacheMemoryBytes, domain.ShapeGPUMemoryUtilization,
}

// whatIf is a parsed what-if query.
type whatIf struct {
	seqs, mml int64
	dtype     string
	mem       ladder.Memory
}

// ladderDtypes are the KV dtypes the ladder's rungs ran, sorted.
func ladderDtypes(l *ladder.Ladder) []string {
	var out []string
	for _, r := range l.Rungs {
		if dt := r.Shape.String(domain.ShapeKVCacheDtype); dt != "" && !slices.Contains(out, dt) {
			out = append(out, dt)
		}
	}
	sort.Strings(out)
	return out
}

// parseWhatIf reads a what-if query. With strict set, parameters other
// than predictParams are an error (the API); the page passes other
// parameters (y) through. Errors are *paramError.
func parseWhatIf(q url.Values, l *ladder.Ladder, strict bool) (whatIf, error) {
	var w whatIf
	var names []string
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.Contains(predictParams, name) {
			if strict {
				return w, &paramError{Param: name, Msg: fmt.Sprintf("unknown parameter %q; allowed parameters: %s", name, strings.Join(predictParams, ", ")), Allowed: predictParams}
			}
			continue
		}
		if len(q[name]) > 1 {
			return w, &paramError{Param: name, Msg: fmt.Sprintf("parameter %q may be given once", name)}
		}
	}
	get := func(name string) string { return strings.TrimSpace(q.Get(name)) }
	for _, p := range []struct {
		name string
		dst  *int64
		unit string
	}{{domain.ShapeMaxNumSeqs, &w.seqs, "sequences"}, {domain.ShapeMaxModelLen, &w.mml, "tokens"}} {
		v := get(p.name)
		n, err := strconv.ParseInt(strings.ReplaceAll(v, ",", ""), 10, 64)
		if v == "" || err != nil || n <= 0 {
			return w, &paramError{Param: p.name, Msg: fmt.Sprintf("%s must be a positive integer (%s), not %q", p.name, p.unit, v)}
		}
		if err := domain.CheckShapeValue(p.name, float64(n)); err != nil {
			return w, &paramError{Param: p.name, Msg: err.Error()}
		}
		*p.dst = n
	}
	w.dtype = get(domain.ShapeKVCacheDtype)
	if dts := ladderDtypes(l); w.dtype != "" && !slices.Contains(dts, w.dtype) {
		msg := fmt.Sprintf("kv_cache_dtype %q is not one this ladder ran: %s", w.dtype, strings.Join(dts, ", "))
		if len(dts) == 0 {
			msg = fmt.Sprintf("kv_cache_dtype %q: this ladder's rungs logged no KV dtype; leave it empty", w.dtype)
		}
		return w, &paramError{Param: domain.ShapeKVCacheDtype, Msg: msg, Allowed: dts}
	}
	kvb, util := get(domain.ShapeKVCacheMemoryBytes), get(domain.ShapeGPUMemoryUtilization)
	if kvb != "" && util != "" {
		return w, &paramError{Param: domain.ShapeGPUMemoryUtilization, Msg: "give kv_cache_memory_bytes or gpu_memory_utilization, not both"}
	}
	if kvb != "" {
		b, ok := domain.ParseByteCount(kvb)
		if !ok || b <= 0 {
			return w, &paramError{Param: domain.ShapeKVCacheMemoryBytes, Msg: fmt.Sprintf("kv_cache_memory_bytes must be a positive number of bytes (or a size such as 9.68 GiB), not %q", kvb)}
		}
		if err := domain.CheckShapeValue(domain.ShapeKVCacheMemoryBytes, float64(b)); err != nil {
			return w, &paramError{Param: domain.ShapeKVCacheMemoryBytes, Msg: err.Error()}
		}
		w.mem.KVCacheMemoryBytes = b
	}
	if util != "" {
		u, err := strconv.ParseFloat(util, 64)
		// NaN compares false with everything: CheckShapeValue names it.
		if err != nil || domain.CheckShapeValue(domain.ShapeGPUMemoryUtilization, u) != nil {
			return w, &paramError{Param: domain.ShapeGPUMemoryUtilization, Msg: fmt.Sprintf("gpu_memory_utilization must be a fraction in (0, 1], not %q", util)}
		}
		w.mem.GPUMemoryUtilization = u
	}
	return w, nil
}

// predictJSON is GET /api/v1/ladders/:id/predict.
type predictJSON struct {
	Ladder     string            `json:"ladder"`
	Host       string            `json:"host"`
	Target     string            `json:"target"`
	Prediction ladder.Prediction `json:"prediction"`
	// Largest is the largest contract predicted to boot and to survive at
	// the proposal's KV dtype and memory setting.
	Largest ladder.Largest `json:"largest"`
	// ReadyTime is the expected time to ready of the proposed shape, from
	// the target's earlier boots on the host (targetBoots); as `analyzer
	// fit -o json`.
	ReadyTime progress.ReadyTimeJSON `json:"ready_time"`
}

func (s *server) apiLadderPredict(c *gin.Context) {
	l := s.apiFindLadder(c)
	if l == nil {
		return
	}
	w, err := parseWhatIf(c.Request.URL.Query(), l, true)
	if err != nil {
		s.badRequestJSON(c, err)
		return
	}
	doc, err := predictDoc(c.Request.Context(), l, w)
	if err == nil {
		var rt progress.ReadyTime
		if rt, err = s.readyTime(c.Request.Context(), l, doc.Prediction); err != nil {
			s.serverError(c, err, true)
			return
		}
		doc.ReadyTime = rt.JSON()
	}
	switch {
	case err != nil && c.Request.Context().Err() != nil:
		// The client went away and the search stopped: nobody reads an
		// answer; the status is for the access log (nginx's convention).
		c.Status(statusClientClosedRequest)
	case err != nil:
		s.badRequestJSON(c, err)
	default:
		c.JSON(http.StatusOK, doc)
	}
}

// statusClientClosedRequest is nginx's 499: the client closed the
// connection before the answer.
const statusClientClosedRequest = 499

// predictDoc is the API's answer about w on l, computed under ctx (the
// request's, so a client that leaves stops the search); it returns ctx's
// error when ctx ends first.
func predictDoc(ctx context.Context, l *ladder.Ladder, w whatIf) (predictJSON, error) {
	m := ladder.NewModel(l)
	pr := m.WhatIf(w.seqs, w.mml, w.dtype, w.mem)
	lg, err := m.LargestContext(ctx, pr.KVDtype, w.mem)
	if err != nil {
		return predictJSON{}, err
	}
	return predictJSON{Ladder: l.ID, Host: l.Host, Target: l.Target, Prediction: pr, Largest: lg}, nil
}

// targetBoots are the attempts of the rungs of every ladder of l's target
// on l's host: the target's earlier boots.
func (s *server) targetBoots(ctx context.Context, l *ladder.Ladder) ([]*domain.Attempt, error) {
	ls, err := s.allLadders(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, o := range ls {
		if o.Host == l.Host && o.Target == l.Target {
			for _, r := range o.Rungs {
				ids = append(ids, r.AttemptID)
			}
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return s.db.ListAttempts(ctx, domain.AttemptFilter{IDs: ids, Brief: true})
}

// readyTime is the expected time to ready of the shape pr proposes on l's
// target (progress.TimeToReady), the tensor parallelism the latest rung's.
func (s *server) readyTime(ctx context.Context, l *ladder.Ladder, pr ladder.Prediction) (progress.ReadyTime, error) {
	earlier, err := s.targetBoots(ctx, l)
	if err != nil || len(l.Rungs) == 0 {
		return progress.ReadyTime{}, err
	}
	return progress.TimeToReady(earlier, progress.ProposedShape(pr.MaxNumSeqs, pr.MaxModelLen, pr.KVDtype, l.Rungs[len(l.Rungs)-1].Shape)), nil
}

// whatIfView is the ladder page's what-if form: the values entered, and
// the prediction when the form was submitted.
type whatIfView struct {
	// Form holds the entered values by parameter name.
	Form   map[string]string
	Dtypes []string
	Error  string
	// Invalid is the parameter the error is about ("" when none), for
	// the form's aria-invalid.
	Invalid string
	P       *ladder.Prediction
	L       *ladder.Largest
	// ReadyTime is the proposed shape's expected time to ready.
	ReadyTime progress.ReadyTime
}

// whatIfPage reads the what-if form of the ladder page; no max_num_seqs
// and max_model_len in the query: an empty form.
func whatIfPage(ctx context.Context, q url.Values, l *ladder.Ladder) *whatIfView {
	v := &whatIfView{Form: map[string]string{}, Dtypes: ladderDtypes(l)}
	for _, p := range predictParams {
		v.Form[p] = q.Get(p)
	}
	if q.Get(domain.ShapeMaxNumSeqs) == "" && q.Get(domain.ShapeMaxModelLen) == "" {
		return v
	}
	w, err := parseWhatIf(q, l, false)
	if err != nil {
		v.Error = err.Error()
		if pe, ok := err.(*paramError); ok {
			v.Invalid = pe.Param
		}
		return v
	}
	m := ladder.NewModel(l)
	pr := m.WhatIf(w.seqs, w.mml, w.dtype, w.mem)
	lg, err := m.LargestContext(ctx, pr.KVDtype, w.mem)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.P, v.L = &pr, &lg
	return v
}

// predictedPoint is the what-if shape on the ladder chart.
type predictedPoint struct {
	X, Y   float64
	Value  float64
	HasY   bool
	Class  string
	Label  string
	Title  string
	Status string
}

// point places the prediction on the chart of dimension dim; nil without
// a prediction.
func (v *whatIfView) point(dim string) *predictedPoint {
	if v == nil || v.P == nil {
		return nil
	}
	p := v.P
	pt := &predictedPoint{Class: "off", Status: p.Boot.Outcome}
	switch p.Boot.Outcome {
	case ladder.OutcomeBoots:
		pt.Class = "ok"
		if p.Survive.Outcome == ladder.OutcomeFails {
			pt.Class = "warn"
		}
	case ladder.OutcomeFails:
		pt.Class = "fail"
	}
	var val float64
	ok := true
	switch dim {
	case domain.ShapeMaxModelLen:
		val = float64(p.MaxModelLen)
	case domain.ShapeMaxNumSeqs:
		val = float64(p.MaxNumSeqs)
	case ladder.DimContract:
		val = float64(p.TokensNeeded)
	case domain.ShapeKVCacheTokens:
		ok = p.PoolTokens != nil
		if ok {
			val = float64(*p.PoolTokens)
		}
	case domain.ShapeKVCacheMemoryBytes:
		ok = p.PoolBytes != nil
		if ok {
			val = float64(*p.PoolBytes)
		}
	case domain.ShapeMaxConcurrency:
		ok = p.PoolTokens != nil
		if ok {
			val = float64(*p.PoolTokens) / float64(p.MaxModelLen)
		}
	default:
		ok = false
	}
	pt.HasY, pt.Value = ok, val
	pt.Label = "what if"
	pt.Title = fmt.Sprintf("what if %d × %d %s: boot %s, survive %s", p.MaxNumSeqs, p.MaxModelLen, p.KVDtype, p.Boot.Outcome, p.Survive.Outcome)
	if ok {
		pt.Title = fmt.Sprintf("what if: %s = %s; ", dim, formatValue(val)) + pt.Title[len("what if "):]
	}
	return pt
}
