// Package rules is the analyzer's rule language: it loads the rule files,
// per-engine profiles (how an engine announces itself, its phases and its
// shape) and verdict/finding rules (which line, in which phase, means which
// root cause), compiles them into a Set and matches lines against it. The
// files are YAML, embedded in the binary (this folder's *.yaml) and
// overridable with a directory; the Manager reloads them. A file that does
// not load leaves the previous set in place; every error names file:line.
//
// Judging an attempt with a Set (engine detection, phases, tracebacks, the
// verdict) is package judge's, which sits between the tracker and rules.
// The line envelope (Envelope) and the error words (IsErrorText) are here,
// with the matcher's literal scan that finds them, so that the judge and
// the log viewer read lines alike.
package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// File is one rule file. It may hold engine profiles, shared traceback
// frames and fatal lines, rules, or any of them.
type File struct {
	Engines []EngineSpec `yaml:"engines"`
	// Frames map traceback frames (module and function) to the phase the
	// engine was in, for every engine: forward-only phase markers that
	// apply after each engine's own.
	Frames []PhaseSpec `yaml:"frames"`
	// Fatal lines end a process: signals, "Killed", core dumps, stated
	// exit codes. A named capture exit_status gives the exit status.
	Fatal []FatalSpec `yaml:"fatal"`
	Rules []RuleSpec  `yaml:"rules"`

	name string
}

// FatalSpec is one death line of the shared fatal vocabulary.
type FatalSpec struct {
	Match string `yaml:"match"`

	line int
}

// DetectSpec is one engine detection pattern: a string (weight 10), or
// {match, weight}. The engine with the most weight of evidence wins, so a
// banner or a module path (10) outweighs a logger format shared with other
// engines (1-3).
type DetectSpec struct {
	Match  string
	Weight int
}

// UnmarshalYAML reads a detect pattern from a string or a {match, weight}
// mapping.
func (d *DetectSpec) UnmarshalYAML(n *yaml.Node) error {
	d.Weight = 10
	if n.Kind == yaml.ScalarNode {
		d.Match = n.Value
		return nil
	}
	var m struct {
		Match  string `yaml:"match"`
		Weight *int   `yaml:"weight"`
	}
	if err := n.Decode(&m); err != nil {
		return err
	}
	if m.Match == "" {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: detect: match is missing", n.Line)}}
	}
	d.Match = m.Match
	if m.Weight != nil {
		if *m.Weight < 1 {
			return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: detect: weight must be at least 1", n.Line)}}
		}
		d.Weight = *m.Weight
	}
	return nil
}

// EngineSpec describes one engine family (spec: "Engines").
type EngineSpec struct {
	// Engine is the spec's engine id: vllm, sglang, llamacpp, halogen, ...
	Engine string `yaml:"engine"`
	// Detect regexes identify the engine, each with a weight of evidence
	// (DetectSpec); a named capture engine_version sets the version.
	Detect []DetectSpec `yaml:"detect"`
	// Fallback marks the profile of attempts whose engine no profile
	// claims (generic readiness and phases); it is never detected.
	Fallback bool `yaml:"fallback"`
	// Banner regexes start a new boot attempt in a plain-text log.
	Banner []string `yaml:"banner"`
	// Strip regexes remove per-process prefixes such as vLLM's
	// "(EngineCore pid=215) " before phase, shape and rule matching.
	Strip []string `yaml:"strip"`
	// LocalTime regexes find the wall-clock stamp the engine prints in its
	// lines, with named captures month, day, hour, minute, second and
	// optionally year: comparing it with the journal's time gives the
	// host's UTC offset (Set.ZoneOf).
	LocalTime []string `yaml:"local_time"`
	// Phases move the attempt into a phase when a line matches.
	Phases []PhaseSpec `yaml:"phases"`
	// Shape lines set shape keys from their named captures.
	Shape []ShapeSpec `yaml:"shape"`
	// ReadyEvidence regexes pick the lines quoted as evidence of a ready
	// attempt besides its readiness line (KV size, concurrency, init time).
	ReadyEvidence []string `yaml:"ready_evidence"`
	// Defaults fill shape keys the engine never printed (e.g. vLLM's
	// kv_cache_dtype "auto").
	Defaults map[string]any `yaml:"defaults"`
	// BlockTokens is the KV block granularity in tokens (ladders; 0 = 4096).
	BlockTokens int `yaml:"block_tokens"`
	// Flags names, per shape key, the flag or setting an operator of this
	// engine changes ("max_model_len: --ctx-size"): notes speak the
	// engine's own words.
	Flags map[string]string `yaml:"flags"`
	// Extends names an engine whose phases, shape lines, prefixes and
	// rules also apply (Ollama embeds llama.cpp's runner). An attempt
	// detected as the parent is upgraded when a line of this engine shows.
	Extends string `yaml:"extends"`
	// DetectPriority orders detection (higher first): wrappers before the
	// engines they embed.
	DetectPriority int `yaml:"detect_priority"`

	file string
	line int
	// itemLines are the lines of the items of its regex lists (detect,
	// banner, strip, local_time, ready_evidence), by YAML key: an error
	// names the item, not the engine.
	itemLines map[string][]int
}

// itemLine is the line of item i of the list key, else the engine's.
func (es EngineSpec) itemLine(key string, i int) int {
	if ls := es.itemLines[key]; i < len(ls) {
		return ls[i]
	}
	return es.line
}

// PhaseSpec is one phase marker.
type PhaseSpec struct {
	Phase string `yaml:"phase"`
	Match string `yaml:"match"`
	// AfterReady markers only count once the engine reported readiness
	// (e.g. request lines mean serving only after ready).
	AfterReady bool `yaml:"after_ready"`
	// ForwardOnly markers never move the phase backwards (hints taken from
	// traceback frames).
	ForwardOnly bool `yaml:"forward_only"`

	line int
}

// ShapeSpec is one shape line. Named captures become shape keys (after
// Keys renames them); Parse decodes one capture further.
type ShapeSpec struct {
	Match string `yaml:"match"`
	// Parse names a decoder for the capture named in From: "pydict" (a
	// Python dict literal, vLLM's "non-default args: {...}"), "pyargs"
	// (Python keyword arguments, SGLang's "ServerArgs(...)") or "kv"
	// (space separated KEY=VALUE pairs).
	Parse string `yaml:"parse"`
	From  string `yaml:"from"`
	// Keys maps engine names to shape keys; with Parse, only mapped keys
	// are kept.
	Keys map[string]string `yaml:"keys"`
	// Set gives shape keys a fixed value when Match matches: a line that
	// states a condition rather than a number ("loaded from the cache").
	Set map[string]string `yaml:"set"`

	line int
}

// RuleSpec is one verdict or finding rule as written in a file.
type RuleSpec struct {
	ID      string   `yaml:"id"`
	Title   string   `yaml:"title"`
	Engines []string `yaml:"engines"`
	// On is "line" (default: evaluated on every line of an attempt) or
	// "end" (evaluated once when the attempt ends, over the attempt).
	On string `yaml:"on"`
	// Match is the single-line regex (RE2) with named captures.
	Match string `yaml:"match"`
	// Literals prefilter lines; when empty they are derived from Match.
	Literals []string `yaml:"literals"`
	// After makes the rule a sequence: Match only counts after a line
	// matching After in the same attempt, and Until (when set) cancels it.
	After string `yaml:"after"`
	Until string `yaml:"until"`
	// When is an expr-lang boolean over the line environment (LineEnv) or,
	// for "end" rules, the attempt environment (EndEnv).
	When string `yaml:"when"`
	// Unless lists regexes that, matching the same line, cancel it.
	Unless []string `yaml:"unless"`
	// Count, when set, makes the rule fire only once its line (with every
	// other condition met) has been seen often enough in the attempt.
	Count *CountSpec `yaml:"count"`
	// Verdict or Finding names what the rule sets (spec identifiers).
	Verdict string `yaml:"verdict"`
	Finding string `yaml:"finding"`
	// Phase, when set, is the attempt's phase if this rule gives the verdict.
	Phase string `yaml:"phase"`
	// PhaseFloor, when set, raises the attempt's phase to at least this one
	// (a compile error is at least in compile).
	PhaseFloor string `yaml:"phase_floor"`
	// Provisional verdicts stand only while the engine makes no progress:
	// the attempt's next phase change withdraws them (a stall rule must not
	// call a slow boot that then got ready a timeout). Line rules with a
	// verdict only.
	Provisional bool `yaml:"provisional"`
	// Priority orders competing root causes (higher wins; ties: earliest).
	Priority int    `yaml:"priority"`
	Severity string `yaml:"severity"`
	// MessageID is the stable journald MESSAGE_ID of notes for this rule.
	MessageID string `yaml:"message_id"`
	// Labels are low-cardinality, static labels.
	Labels map[string]string `yaml:"labels"`
	// Note is a text/template over NoteData.
	Note  string     `yaml:"note"`
	Tests []TestSpec `yaml:"tests"`

	file string
	line int
	// countNull: "count:" was written with no block (an error, not "no count").
	countNull bool
}

// CountSpec is a rule's count block, `count: {gte: 3, within: 5m, distinct:
// rank}` (Sigma's event_count, or value_count with Distinct). The rule fires
// once per attempt, on the line that brings the count to Gte.
type CountSpec struct {
	// Gte is how many lines (or distinct values) fire the rule. Required,
	// at least 1: there is no default.
	Gte *int `yaml:"gte"`
	// Within, when set, is a sliding window (a Go duration such as "5m",
	// > 0) over the lines' timestamps: only lines at most this much older
	// than the current one count. A line without a timestamp is inside
	// every window.
	Within string `yaml:"within"`
	// Distinct names a capture of Match: count its distinct values instead
	// of lines. A line where the capture is empty does not count.
	Distinct string `yaml:"distinct"`

	line int
}

// TestSpec is a test embedded in a rule file.
type TestSpec struct {
	Name string `yaml:"name"`
	// Engine and Phase set the attempt's state before the lines.
	Engine string         `yaml:"engine"`
	Phase  string         `yaml:"phase"`
	Shape  map[string]any `yaml:"shape"`
	// Lines are fed in order to a fresh attempt.
	Lines []TestLine `yaml:"lines"`
	// Attempt sets attempt facts for "end" rules.
	Attempt map[string]any `yaml:"attempt"`
	Expect  TestExpect     `yaml:"expect"`

	line int
}

// FileLine is the line of the test in its rule file.
func (t TestSpec) FileLine() int { return t.line }

// TestLine is one line of a rule test. In YAML it is either a plain string
// (the line, at the previous line's time) or a mapping
//
//	{t: +1.2s, msg: "...", repeat: 90, every: 10s}
//
// where t is the line's time as an offset from the test's start (a Go
// duration, optionally with a leading "+"; absent: the previous line's time),
// and repeat feeds the line that many times, every apart (for count rules).
type TestLine struct {
	// Msg is the line as the engine printed it.
	Msg string
	// At is the time offset from the test's start; HasAt says t was given.
	At    time.Duration
	HasAt bool
	// Repeat is how many times the line is fed (>= 1); Every is the time
	// between two of them.
	Repeat int
	Every  time.Duration
}

// UnmarshalYAML reads a test line from a string or a {t, msg, repeat,
// every} mapping. Errors name the line of the test line.
func (tl *TestLine) UnmarshalYAML(n *yaml.Node) error {
	bad := func(n *yaml.Node, format string, args ...any) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: test line: ", n.Line) + fmt.Sprintf(format, args...)}}
	}
	*tl = TestLine{Repeat: 1}
	switch n.Kind {
	case yaml.ScalarNode:
		tl.Msg = n.Value
		return nil
	case yaml.MappingNode:
	default:
		return bad(n, "want a string or a mapping {t, msg, repeat, every}")
	}
	var every *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias // msg: *wait, the same line in several tests
		}
		if v.Kind != yaml.ScalarNode {
			return bad(v, "%s must be a scalar", k.Value)
		}
		switch k.Value {
		case "msg":
			tl.Msg = v.Value
		case "t":
			d, err := time.ParseDuration(v.Value)
			if err != nil {
				return bad(v, "t: %v (want an offset from the test's start such as +1.5s)", err)
			}
			if d < 0 {
				return bad(v, "t must not be negative, not %s", v.Value)
			}
			tl.At, tl.HasAt = d, true
		case "repeat":
			r, err := strconv.Atoi(v.Value)
			if err != nil || r < 1 {
				return bad(v, "repeat must be a whole number >= 1, not %q", v.Value)
			}
			tl.Repeat = r
		case "every":
			d, err := time.ParseDuration(v.Value)
			if err != nil || d <= 0 {
				return bad(v, "every must be a positive duration such as 10s, not %q", v.Value)
			}
			tl.Every, every = d, v
		default:
			return bad(k, "unknown key %q (t, msg, repeat, every)", k.Value)
		}
	}
	if tl.Msg == "" {
		return bad(n, "msg is missing")
	}
	if tl.Repeat > 1 && every == nil {
		return bad(n, "repeat needs every (the time between the copies)")
	}
	return nil
}

// TestExpect is what a test expects of its rule.
type TestExpect struct {
	NoMatch      bool              `yaml:"no_match"`
	Captures     map[string]string `yaml:"captures"`
	NoteContains []string          `yaml:"note_contains"`
}

// LoadError is one problem in a rule file, at file:line.
type LoadError struct {
	File string
	Line int
	Msg  string
}

func (e LoadError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Errors is every problem found while loading a rule set.
type Errors []LoadError

func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// parseFile decodes one YAML file, keeping line numbers for errors.
func parseFile(name string, data []byte) (*File, Errors) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, Errors{{File: name, Line: yamlErrLine(err), Msg: err.Error()}}
	}
	f := File{name: name}
	var err error
	if onlyKnownFields(&root, reflect.TypeFor[File]()) {
		err = root.Decode(&f) // what the strict decoder would do (strict.go)
	} else {
		dec2 := yaml.NewDecoder(bytes.NewReader(data))
		dec2.KnownFields(true)
		err = dec2.Decode(&f)
	}
	if err != nil {
		// A type error leaves the rest decoded: the engines the file names
		// stay known, as bare names (the set does not load anyway), so
		// rules of other files that use them add no second, unrelated
		// error.
		var te *yaml.TypeError
		if errors.As(err, &te) {
			broken := &File{name: name}
			for _, es := range f.Engines {
				broken.Engines = append(broken.Engines, EngineSpec{Engine: es.Engine})
			}
			return broken, Errors{{File: name, Line: yamlErrLine(err), Msg: err.Error()}}
		}
		return nil, Errors{{File: name, Line: yamlErrLine(err), Msg: err.Error()}}
	}
	// Attach line numbers from the node tree.
	if len(root.Content) == 1 && root.Content[0].Kind == yaml.MappingNode {
		m := root.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			key, val := m.Content[i].Value, m.Content[i+1]
			switch key {
			case "engines":
				for j, n := range val.Content {
					if j < len(f.Engines) {
						f.Engines[j].file, f.Engines[j].line = name, n.Line
						attachEngineLines(&f.Engines[j], n)
					}
				}
			case "frames":
				for j, n := range val.Content {
					if j < len(f.Frames) {
						f.Frames[j].line = n.Line
					}
				}
			case "fatal":
				for j, n := range val.Content {
					if j < len(f.Fatal) {
						f.Fatal[j].line = n.Line
					}
				}
			case "rules":
				for j, n := range val.Content {
					if j < len(f.Rules) {
						f.Rules[j].file, f.Rules[j].line = name, n.Line
						attachRuleLines(&f.Rules[j], n)
					}
				}
			}
		}
	}
	return &f, nil
}

func attachEngineLines(e *EngineSpec, n *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i].Value, n.Content[i+1]
		if val.Kind == yaml.SequenceNode {
			if e.itemLines == nil {
				e.itemLines = map[string][]int{}
			}
			for _, c := range val.Content {
				e.itemLines[key] = append(e.itemLines[key], c.Line)
			}
		}
		switch key {
		case "phases":
			for j, c := range val.Content {
				if j < len(e.Phases) {
					e.Phases[j].line = c.Line
				}
			}
		case "shape":
			for j, c := range val.Content {
				if j < len(e.Shape) {
					e.Shape[j].line = c.Line
				}
			}
		}
	}
}

// attachRuleLines records the lines of a rule's tests and count block.
func attachRuleLines(r *RuleSpec, n *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch val := n.Content[i+1]; n.Content[i].Value {
		case "tests":
			for j, c := range val.Content {
				if j < len(r.Tests) {
					r.Tests[j].line = c.Line
				}
			}
		case "count":
			if r.Count != nil {
				r.Count.line = n.Content[i].Line
			} else if val.Tag == "!!null" {
				r.countNull = true
			}
		}
	}
}

func yamlErrLine(err error) int {
	var line int
	if _, e := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line); e == nil {
		return line
	}
	// yaml.TypeError lists "line N: ..." entries.
	if i := strings.Index(err.Error(), "line "); i >= 0 {
		_, _ = fmt.Sscanf(err.Error()[i:], "line %d", &line) // no number: line stays 0
	}
	return line
}

// ruleFileNames lists the *.yaml / *.yml files of fsys, sorted.
func ruleFileNames(fsys fs.FS) ([]string, error) {
	var names []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (path.Ext(p) == ".yaml" || path.Ext(p) == ".yml") {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}

// readDir parses every *.yaml / *.yml file of fsys, in name order (on
// every core: eachParallel).
func readDir(fsys fs.FS) ([]*File, []string, Errors) {
	names, err := ruleFileNames(fsys)
	if err != nil {
		return nil, nil, Errors{{File: ".", Msg: err.Error()}}
	}
	parsed := make([]*File, len(names))
	perFile := make([]Errors, len(names))
	eachParallel(len(names), func(i int) {
		data, err := fs.ReadFile(fsys, names[i])
		if err != nil {
			perFile[i] = Errors{{File: names[i], Msg: err.Error()}}
			return
		}
		parsed[i], perFile[i] = parseFile(names[i], data)
	})
	var files []*File
	var errs Errors
	for i := range names {
		errs = append(errs, perFile[i]...)
		if parsed[i] != nil {
			files = append(files, parsed[i])
		}
	}
	return files, names, errs
}
