package rules

import (
	"regexp"

	"github.com/expr-lang/expr"

	"github.com/llmfleet/analyzer/domain"
)

// HasChildren reports whether another engine extends e (so an attempt of e
// may turn out to be one of them).
func (e *Engine) HasChildren() bool { return e != nil && len(e.children) > 0 }

// Parent returns the engine e extends, or "".
func (e *Engine) Parent() string {
	if e == nil {
		return ""
	}
	return e.Extends
}

// Engine returns the profile of the named engine, or nil.
func (s *Set) Engine(name string) *Engine { return s.byName[name] }

// Engines returns the engine profiles in file order.
func (s *Set) Engines() []*Engine { return s.engines }

// Rules returns every rule in file order.
func (s *Set) Rules() []*Rule { return s.all }

// Detect returns the engine a line identifies and the version it states.
func (s *Set) Detect(line string) (engine, version string, ok bool) {
	for _, e := range s.engines {
		for i, re := range e.detect {
			if i < len(e.detectLits) && !hasAny(line, e.detectLits[i]) {
				continue
			}
			m := re.FindStringSubmatchIndex(line)
			if m == nil {
				continue
			}
			if i := re.SubexpIndex("engine_version"); i >= 0 && m[2*i] >= 0 {
				version = line[m[2*i]:m[2*i+1]]
			}
			return e.Name, version, true
		}
	}
	return "", "", false
}

// Banner reports whether the line starts a new boot of any engine (plain
// text segmentation) and which.
func (s *Set) Banner(line string) (string, bool) {
	for _, e := range s.engines {
		for _, re := range e.banner {
			if re.MatchString(line) {
				return e.Name, true
			}
		}
	}
	return "", false
}

// Strip removes the engine's per-process prefixes from a line.
func (e *Engine) Strip(line string) string {
	if e == nil {
		return line
	}
	for _, re := range e.strip {
		if loc := re.FindStringIndex(line); loc != nil && loc[0] == 0 {
			line = line[loc[1]:]
		}
	}
	return line
}

// Phase returns the phase a line moves the attempt into. forwardOnly
// markers must not move an attempt backwards.
func (e *Engine) Phase(line string, reachedReady bool) (p domain.Phase, forwardOnly, ok bool) {
	if e == nil {
		return "", false, false
	}
	for _, m := range e.phases {
		if m.afterReady && !reachedReady {
			continue
		}
		if hasAny(line, m.lits) && m.re.MatchString(line) {
			return m.phase, m.forwardOnly, true
		}
	}
	return "", false, false
}

// IsReadyEvidence reports whether a line is worth quoting as evidence of a
// ready attempt.
func (e *Engine) IsReadyEvidence(line string) bool {
	if e == nil {
		return false
	}
	for i, re := range e.readyEv {
		if hasAny(line, e.readyLits[i]) && re.MatchString(line) {
			return true
		}
	}
	return false
}

// UpdateShape sets the shape keys a line reports. It returns whether any
// key was set.
func (e *Engine) UpdateShape(line string, shape domain.Shape) bool {
	if e == nil {
		return false
	}
	changed := false
	for _, sl := range e.shape {
		if !hasAny(line, sl.lits) {
			continue
		}
		m := sl.re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if sl.parse != "" {
			raw := m[sl.re.SubexpIndex(sl.from)]
			var kv map[string]any
			switch sl.parse {
			case "pydict":
				kv = parsePyDict(raw)
			case "pyargs":
				kv = parsePyArgs(raw)
			case "kv":
				kv = parseKV(raw)
			}
			for name, key := range sl.keys {
				if v, ok := kv[name]; ok {
					shape.Set(key, normalizeValue(key, v))
					changed = true
				}
			}
			continue
		}
		for i, name := range sl.re.SubexpNames() {
			if name == "" || m[i] == "" {
				continue
			}
			key := name
			if k, ok := sl.keys[name]; ok {
				key = k
			}
			shape.Set(key, normalizeValue(key, m[i]))
			changed = true
		}
	}
	return changed
}

// ApplyDefaults fills shape keys the engine never printed.
func (e *Engine) ApplyDefaults(shape domain.Shape) {
	if e == nil {
		return
	}
	for k, v := range e.Defaults {
		if _, ok := shape[k]; !ok {
			shape.Set(k, normalizeValue(k, v))
		}
	}
}

// SeqState is the per-attempt state of sequence rules (After/Until).
type SeqState map[string]bool

// Hit is one rule firing on a line.
type Hit struct {
	Rule     *Rule
	Captures map[string]string
	// At is the byte offset of the match in the line.
	At int
}

// sourceLine matches Python source quoted in a traceback ("raise
// RuntimeError(f\"NCCL error: {error_str}\")"): it names an error without
// being one, so no rule may fire on it.
var sourceLine = regexp.MustCompile(`(?:^|\] )\s*(?:raise|return|assert|except|if|elif)\s|\{[A-Za-z_][A-Za-z_0-9.]*\}`)

// MatchLine evaluates the line rules of env.Engine (and the unscoped ones)
// on one line. Every rule is evaluated (all-matches semantics). An expr
// runtime error counts as no match. Quoted source lines never match.
func (s *Set) MatchLine(env *LineEnv, seq SeqState) []Hit {
	var hits []Hit
	for _, r := range s.lineRules[env.Engine] {
		if r.after != nil {
			if r.until != nil && seq[r.ID] && r.until.MatchString(env.Line) {
				seq[r.ID] = false
			}
			if r.after.MatchString(env.Line) {
				seq[r.ID] = true
				continue
			}
			if !seq[r.ID] {
				continue
			}
		}
		if h, ok := r.matchLine(env); ok {
			hits = append(hits, h)
		}
	}
	return hits
}

func (r *Rule) matchLine(env *LineEnv) (Hit, bool) {
	if !hasAny(env.Line, r.literals) {
		return Hit{}, false
	}
	m := r.match.FindStringSubmatchIndex(env.Line)
	if m == nil || sourceLine.MatchString(env.Line) {
		return Hit{}, false
	}
	for _, u := range r.unless {
		if u.MatchString(env.Line) {
			return Hit{}, false
		}
	}
	caps := map[string]string{}
	for i, name := range r.match.SubexpNames() {
		if name != "" && m[2*i] >= 0 && m[2*i+1] > m[2*i] {
			caps[name] = env.Line[m[2*i]:m[2*i+1]]
		}
	}
	if r.when != nil {
		env.Captures = caps
		out, err := expr.Run(r.when, env)
		if err != nil || out != true {
			return Hit{}, false
		}
	}
	return Hit{Rule: r, Captures: caps, At: m[0]}, true
}

// MatchEnd evaluates the end rules on an ended attempt.
func (s *Set) MatchEnd(env *EndEnv) []*Rule {
	var out []*Rule
	for _, r := range s.endRules {
		if len(r.Engines) > 0 && !contains(r.Engines, env.Engine) {
			continue
		}
		res, err := expr.Run(r.when, env)
		if err == nil && res == true {
			out = append(out, r)
		}
	}
	return out
}
