package judge

import (
	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

type earlyLine struct {
	ev   domain.Evidence
	line string
}

// earlyLines and earlyBytes cap the lines kept to be judged again when the
// engine detection changes its mind; past them the engine is fixed.
const (
	earlyLines    = 400
	earlyMaxBytes = 256 << 10
)

// Line judges one line of the attempt's output: text is the line with
// colour remnants and container prefixes removed, ev the line's time,
// cursor and trimmed text for evidence.
func (j *Judge) Line(text string, ev domain.Evidence) {
	j.version++
	l := j.scan
	if j.locked && j.eng != nil && j.a.EngineVersion != "" && !j.eng.HasChildren() {
		// The engine is settled (detect reads no more lines): cut the
		// process prefix before the literal scan, not after it, so the
		// scan skips it (a fifth of a short vLLM line).
		k := j.eng.StripLen(text)
		j.set.Prepare(l, text[k:])
		j.lineJudged(ev, l, true)
		return
	}
	j.set.Prepare(l, text)
	if !j.locked {
		if j.early == nil {
			j.early = make([]earlyLine, 0, 64) // most attempts of a night ladder have fewer lines
		}
		j.early = append(j.early, earlyLine{ev, text})
		j.earlyBytes += len(text)
		if len(j.early) > earlyLines || j.earlyBytes > earlyMaxBytes {
			j.locked, j.early = true, nil
		}
	}
	if j.detect(l) {
		// The engine changed: judge every line kept so far again with its
		// profile (this one included).
		early := j.early
		j.reset()
		for _, el := range early {
			j.lineJudged(el.ev, j.set.NewLine(el.line), false)
		}
		return
	}
	j.lineJudged(ev, l, false)
}

// vote is an engine's evidence so far: its strongest signal, and how many
// lines gave one. A strong signal (a banner, a module path) outweighs any
// number of weak ones (a logger format several engines share).
type vote struct{ max, n int }

func (v vote) beats(w vote) bool { return v.max > w.max || (v.max == w.max && v.n > w.n) }

// engineVote is the vote of one engine, or of one family in elect.
type engineVote struct {
	engine string
	vote
}

// addVote returns votes with engine in it (added last when missing) and
// its index. It takes and returns the slice, so elect's totals can stay
// on the stack.
func addVote(votes []engineVote, engine string) ([]engineVote, int) {
	for i := range votes {
		if votes[i].engine == engine {
			return votes, i
		}
	}
	return append(votes, engineVote{engine: engine}), len(votes)
}

// detect weighs the engine evidence of l; it reports whether the engine
// changed family (vLLM to SGLang, not llama.cpp to the Ollama that embeds
// it): the lines so far must then be judged again with its profile.
func (j *Judge) detect(l *rules.Line) bool {
	a := &j.a
	if j.locked && a.EngineVersion != "" && !j.eng.HasChildren() {
		return false
	}
	name, version, weight, ok := j.set.DetectWeighted(l)
	if !ok {
		return false
	}
	if a.EngineVersion == "" && name == a.Engine && version != "" {
		a.EngineVersion = version
	}
	if j.locked {
		// Only a wrapper may still show itself (Ollama after llama-server's
		// first lines).
		if a.Engine != "" && name != a.Engine && j.set.Engine(name).Parent() == a.Engine {
			j.setEngine(name, version)
		}
		return false
	}
	var k int
	j.votes, k = addVote(j.votes, name)
	v := &j.votes[k].vote
	v.n++
	v.max = max(v.max, weight)
	cur := j.family(a.Engine)
	best, pick := j.elect(cur)
	if pick == a.Engine {
		return false
	}
	changed := a.Engine != "" && best != cur
	first := a.Engine == ""
	j.setEngine(pick, "")
	if pick == name {
		a.EngineVersion = version
	}
	return changed || first
}

// family is engine e's family: the engine it wraps, or itself.
func (j *Judge) family(e string) string {
	if p := j.set.Engine(e).Parent(); p != "" {
		return p
	}
	return e
}

// elect weighs the votes: the strongest family wins (cur, the family of
// the engine so far, unless another beats it); within it, pick is the
// wrapper once it showed itself. Families and wrappers are taken in the
// order their evidence came, so a tie always ends the same way. It runs on
// every line that names an engine until the engine is locked: the totals
// stay on the stack.
func (j *Judge) elect(cur string) (best, pick string) {
	var buf [8]engineVote
	totals := buf[:0]
	for _, v := range j.votes {
		var k int
		totals, k = addVote(totals, j.family(v.engine))
		totals[k].n += v.n
		totals[k].max = max(totals[k].max, v.max)
	}
	best = cur
	var bestVote vote
	for _, t := range totals {
		if t.engine == cur {
			bestVote = t.vote
		}
	}
	for _, t := range totals {
		if best == "" || t.beats(bestVote) {
			best, bestVote = t.engine, t.vote
		}
	}
	pick = best
	for _, v := range j.votes {
		if v.engine != best && j.family(v.engine) == best {
			pick = v.engine // the wrapper showed itself
		}
	}
	return best, pick
}

// reset forgets what the lines said (before they are judged again with
// another engine's profile); findings given by Finding stay.
func (j *Judge) reset() {
	a := &j.a
	eng, version := a.Engine, a.EngineVersion
	start := a.StartedAt
	*a = domain.Attempt{Engine: eng, EngineVersion: version, Phase: domain.PhaseStart, Shape: domain.Shape{}}
	a.StartedAt = start
	a.Timeline = []domain.PhaseMark{{Phase: domain.PhaseStart, Time: start}}
	j.seq = rules.SeqState{}
	j.roots, j.ctxFill, j.lastErrors, j.readyEv = nil, nil, nil, nil
	j.ring.reset()
	j.side, j.sideOrder = map[string]*pending{}, nil
	j.exc = excReader{}
	j.steps, j.exit = nil, -1
	j.usage, j.lastMarker = usageText{}, nil
	for i, ev := range j.external {
		j.addSide(findingRule(j.set, j.externalID[i]), a.Phase, nil, "", ev)
	}
}

func (j *Judge) setEngine(name, version string) {
	j.a.Engine = name
	if version != "" {
		j.a.EngineVersion = version
	}
	j.eng = j.set.Engine(name)
	if j.eng == nil {
		j.eng = j.set.Fallback()
	}
}
