package judge

import (
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// setPhase moves the attempt into p; it reports whether the phase changed.
func (j *Judge) setPhase(p domain.Phase, forwardOnly bool, ev domain.Evidence) bool {
	a := &j.a
	at := ev.Time
	if p == a.Phase || (forwardOnly && p.Rank() <= a.Phase.Rank()) {
		return false
	}
	a.Phase = p
	a.Timeline = append(a.Timeline, domain.PhaseMark{Phase: p, Time: at, Cursor: ev.Cursor, Message: ev.Message})
	for _, r := range j.roots {
		if r.rule.Provisional && p.Rank() > r.phase.Rank() {
			r.gone = true // the engine moved on: the stall the verdict named is over
		}
	}
	if (p == domain.PhaseReady || p == domain.PhaseServing) && a.ReadyAt.IsZero() {
		// Serving a request means the engine was ready, whether or not the
		// paste kept its readiness line.
		a.ReadyAt = at
		if at.IsZero() {
			a.ReadyAt = time.Unix(0, 1) // plain text without times: still "reached"
		}
	}
	return true
}

// reconsiderWindow is how many lines after the decisive line a traceback
// frame may still tell where the engine was (vLLM logs the exception first
// and its traceback after it).
const reconsiderWindow = 400

// reconsider re-judges the decisive line when a traceback frame arriving
// shortly after it moved the phase forward (e.g. "in capture_model" below a
// bare OOM line): the phase-dependent rules then pick the right verdict. The
// rule that fired keeps the verdict if it still holds in the new phase.
func (j *Judge) reconsider() {
	a := &j.a
	for _, b := range j.roots {
		if b.gone || a.Lines-b.lineNo > reconsiderWindow || a.Phase.Rank() <= b.phase.Rank() {
			continue
		}
		env := &rules.LineEnv{Line: b.text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit,
			ReachedReady: b.ready, Shape: a.Shape}
		var pick *rules.Hit
		for _, h := range j.match(nil, env, rules.SeqState{}) {
			h := h
			if !h.Rule.IsRootCause() {
				continue
			}
			if h.Rule == b.rule {
				pick = &h
				break
			}
			if pick == nil || h.Rule.Priority > pick.Rule.Priority {
				pick = &h
			}
		}
		if pick == nil {
			continue
		}
		b.rule, b.captures = pick.Rule, pick.Captures
		b.phase = phaseFor(pick.Rule, a.Phase)
	}
}

// phaseFor is the phase a rule's finding is in when it fires in phase cur:
// the rule's own phase where it names one (it knows where the failure
// was, e.g. an allocation the size of the KV pool); else its floor or its
// verdict's lifts the phase, and nothing moves it backwards.
func phaseFor(r *rules.Rule, cur domain.Phase) domain.Phase {
	if r.Phase != "" {
		return r.Phase
	}
	p := cur
	if p == domain.PhaseStart && verdictNatural[r.Verdict] != "" {
		// No phase marker seen: the verdict's own phase (spec: "phase from
		// evidence").
		p = verdictNatural[r.Verdict]
	}
	for _, q := range []domain.Phase{r.Floor, verdictFloor[r.Verdict]} {
		if q != "" && q.Rank() > p.Rank() {
			p = q
		}
	}
	return p
}

// verdictNatural is the phase a verdict names when nothing else tells:
// model files are read while loading the weights.
var verdictNatural = map[domain.Verdict]domain.Phase{
	domain.VerdictMissingPayload: domain.PhaseWeights,
}

// verdictFloor is the earliest phase a verdict can happen in (spec: a
// weights OOM happened in weights).
var verdictFloor = map[domain.Verdict]domain.Phase{
	domain.VerdictOOMWeights:          domain.PhaseWeights,
	domain.VerdictOOMProfile:          domain.PhaseProfile,
	domain.VerdictOOMKVAlloc:          domain.PhaseKVAlloc,
	domain.VerdictOOMGraphCapture:     domain.PhaseGraphCapture,
	domain.VerdictOOMRuntime:          domain.PhaseServing,
	domain.VerdictKVCacheInsufficient: domain.PhaseKVAlloc,
	domain.VerdictCompileError:        domain.PhaseCompile,
	domain.VerdictDynamoConstraint:    domain.PhaseCompile,
	domain.VerdictDistributedError:    domain.PhaseInit,
	domain.VerdictConfigError:         domain.PhaseArgs,
	domain.VerdictMissingPayload:      domain.PhaseArgs,
}

// step is a forward step of the boot phases by one of the engine's own
// progress lines (not a traceback frame): at line line, into phase.
type step struct {
	line  int
	phase domain.Phase
}

// maxSteps bounds the steps kept; the phases are few, so only an engine
// that keeps going back and forth reaches it (the latest steps count).
const maxSteps = 64

func (j *Judge) addStep(line int, p domain.Phase) {
	if len(j.steps) == maxSteps {
		j.steps = append(j.steps[:0], j.steps[1:]...)
	}
	j.steps = append(j.steps, step{line, p})
}

// movedOn reports whether the boot went on past phase p after line n: a
// later step into a later boot phase shows the engine survived what line
// n said. (A step into the same phase does not: progress bars flushed
// after the error, other ranks still at it.)
func (j *Judge) movedOn(n int, p domain.Phase) bool {
	for i := len(j.steps) - 1; i >= 0 && j.steps[i].line > n; i-- {
		if j.steps[i].phase.Rank() > p.Rank() {
			return true
		}
	}
	return false
}
