// Package rules loads the analyzer's rule files: per-engine profiles (how an
// engine announces itself, its phases and its shape) and verdict/finding
// rules (which line, in which phase, means which root cause). The files are
// YAML, embedded in the binary (this folder's *.yaml) and overridable with a
// directory. A file that does not load leaves the previous set in place;
// every error names file:line.
package rules

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is one rule file. It may hold engine profiles, rules, or both.
type File struct {
	Engines []EngineSpec `yaml:"engines"`
	Rules   []RuleSpec   `yaml:"rules"`
}

// EngineSpec describes one engine family (spec: "Engines").
type EngineSpec struct {
	// Engine is the spec's engine id: vllm, sglang, llamacpp, halogen, ...
	Engine string `yaml:"engine"`
	// Detect regexes identify the engine; a named capture engine_version
	// sets the version.
	Detect []string `yaml:"detect"`
	// Banner regexes start a new boot attempt in a plain-text log.
	Banner []string `yaml:"banner"`
	// Strip regexes remove per-process prefixes such as vLLM's
	// "(EngineCore pid=215) " before phase, shape and rule matching.
	Strip []string `yaml:"strip"`
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
	// Extends names an engine whose phases, shape lines, prefixes and
	// rules also apply (Ollama embeds llama.cpp's runner). An attempt
	// detected as the parent is upgraded when a line of this engine shows.
	Extends string `yaml:"extends"`
	// DetectPriority orders detection (higher first): wrappers before the
	// engines they embed.
	DetectPriority int `yaml:"detect_priority"`

	file string
	line int
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
	// Verdict or Finding names what the rule sets (spec identifiers).
	Verdict string `yaml:"verdict"`
	Finding string `yaml:"finding"`
	// Phase, when set, is the attempt's phase if this rule gives the verdict.
	Phase string `yaml:"phase"`
	// PhaseFloor, when set, raises the attempt's phase to at least this one
	// (a compile error is at least in compile).
	PhaseFloor string `yaml:"phase_floor"`
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
}

// TestSpec is a test embedded in a rule file.
type TestSpec struct {
	Name string `yaml:"name"`
	// Engine and Phase set the attempt's state before the lines.
	Engine string         `yaml:"engine"`
	Phase  string         `yaml:"phase"`
	Shape  map[string]any `yaml:"shape"`
	// Lines are fed in order to a fresh attempt.
	Lines []string `yaml:"lines"`
	// Attempt sets attempt facts for "end" rules.
	Attempt map[string]any `yaml:"attempt"`
	Expect  TestExpect     `yaml:"expect"`

	line int
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
	var f File
	dec2 := yaml.NewDecoder(bytes.NewReader(data))
	dec2.KnownFields(true)
	if err := dec2.Decode(&f); err != nil {
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
			case "rules":
				for j, n := range val.Content {
					if j < len(f.Rules) {
						f.Rules[j].file, f.Rules[j].line = name, n.Line
						attachTestLines(&f.Rules[j], n)
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

func attachTestLines(r *RuleSpec, n *yaml.Node) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "tests" {
			for j, c := range n.Content[i+1].Content {
				if j < len(r.Tests) {
					r.Tests[j].line = c.Line
				}
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
		fmt.Sscanf(err.Error()[i:], "line %d", &line)
	}
	return line
}

// readDir parses every *.yaml / *.yml file of fsys in name order.
func readDir(fsys fs.FS) ([]*File, []string, Errors) {
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
	if err != nil {
		return nil, nil, Errors{{File: ".", Msg: err.Error()}}
	}
	sort.Strings(names)
	var files []*File
	var errs Errors
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			errs = append(errs, LoadError{File: n, Msg: err.Error()})
			continue
		}
		f, e := parseFile(n, data)
		errs = append(errs, e...)
		if f != nil {
			files = append(files, f)
		}
	}
	return files, names, errs
}
