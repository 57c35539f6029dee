package deploy

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// AlloyJournal models what the shipped Alloy config sends for one journal
// entry: loki.source.journal turns every field into a __journal_<lowercase
// name> label (plus __journal_priority_keyword), adds its static labels,
// applies the relabel rules of the loki.relabel component it names, drops
// the labels that still start with "__", and the loki.process component it
// forwards to moves the labels listed in stage.structured_metadata into
// structured metadata. Tests use it to push a journal capture exactly as a
// host running that config would.
type AlloyJournal struct {
	StaticLabels map[string]string
	Rules        []RelabelRule
	// Metadata maps a structured-metadata name to the label it takes.
	Metadata map[string]string
}

// RelabelRule is one rule block of loki.relabel (Prometheus relabelling).
type RelabelRule struct {
	SourceLabels []string
	Separator    string
	Regex        string
	TargetLabel  string
	Replacement  string
	Action       string
	re           *regexp.Regexp
}

// JournalPipeline finds the loki.source.journal component of root and the
// relabel and process components it uses.
func JournalPipeline(root *Block) (*AlloyJournal, error) {
	srcs := root.Find("loki.source.journal")
	if len(srcs) != 1 {
		return nil, fmt.Errorf("want one loki.source.journal, found %d", len(srcs))
	}
	src := srcs[0]
	aj := &AlloyJournal{StaticLabels: map[string]string{}, Metadata: map[string]string{}}
	if v, ok := src.Attrs["labels"]; ok {
		if v.Kind != "object" {
			return nil, fmt.Errorf("loki.source.journal labels: want an object")
		}
		for _, k := range v.Keys {
			aj.StaticLabels[k] = v.Object[k].Str
		}
	}
	if v, ok := src.Attrs["relabel_rules"]; ok {
		name, ok := strings.CutPrefix(v.Str, "loki.relabel.")
		name, ok2 := strings.CutSuffix(name, ".rules")
		if v.Kind != "expr" || !ok || !ok2 {
			return nil, fmt.Errorf("loki.source.journal relabel_rules = %s: want loki.relabel.NAME.rules", v.Str)
		}
		rl := root.Component("loki.relabel", name)
		if rl == nil {
			return nil, fmt.Errorf("loki.relabel %q not found", name)
		}
		for _, r := range rl.Find("rule") {
			rule, err := relabelRule(r)
			if err != nil {
				return nil, err
			}
			aj.Rules = append(aj.Rules, rule)
		}
	}
	fwd, ok := src.Attrs["forward_to"]
	if !ok || fwd.Kind != "list" {
		return nil, fmt.Errorf("loki.source.journal: forward_to must be a list")
	}
	for _, f := range fwd.List {
		name, ok := strings.CutPrefix(f.Str, "loki.process.")
		if !ok {
			continue
		}
		name = strings.TrimSuffix(name, ".receiver")
		proc := root.Component("loki.process", name)
		if proc == nil {
			return nil, fmt.Errorf("loki.process %q not found", name)
		}
		for _, st := range proc.Find("stage.structured_metadata") {
			vals, ok := st.Attrs["values"]
			if !ok || vals.Kind != "object" {
				return nil, fmt.Errorf("line %d: stage.structured_metadata needs a values object", st.Line)
			}
			for _, k := range vals.Keys {
				srcLabel := vals.Object[k].Str
				if srcLabel == "" {
					srcLabel = k
				}
				aj.Metadata[k] = srcLabel
			}
		}
	}
	return aj, nil
}

func relabelRule(b *Block) (RelabelRule, error) {
	r := RelabelRule{Separator: ";", Regex: "(.*)", Replacement: "$1", Action: "replace"}
	for _, name := range b.Order {
		v := b.Attrs[name]
		switch name {
		case "source_labels":
			if v.Kind != "list" {
				return r, fmt.Errorf("line %d: source_labels must be a list", b.Line)
			}
			for _, e := range v.List {
				r.SourceLabels = append(r.SourceLabels, e.Str)
			}
		case "separator":
			r.Separator = v.Str
		case "regex":
			r.Regex = v.Str
		case "target_label":
			r.TargetLabel = v.Str
		case "replacement":
			r.Replacement = v.Str
		case "action":
			r.Action = v.Str
		default:
			return r, fmt.Errorf("line %d: rule attribute %s is not modelled", b.Line, name)
		}
	}
	re, err := regexp.Compile("^(?:" + r.Regex + ")$")
	if err != nil {
		return r, fmt.Errorf("line %d: regex: %v", b.Line, err)
	}
	r.re = re
	switch r.Action {
	case "replace":
		if r.TargetLabel == "" {
			return r, fmt.Errorf("line %d: replace needs target_label", b.Line)
		}
	case "keep", "drop", "labeldrop", "labelkeep":
	default:
		return r, fmt.Errorf("line %d: action %q is not modelled", b.Line, r.Action)
	}
	return r, nil
}

// priorityKeywords is loki.source.journal's PRIORITY → keyword table.
var priorityKeywords = map[string]string{"0": "emerg", "1": "alert", "2": "crit", "3": "error",
	"4": "warning", "5": "notice", "6": "info", "7": "debug"}

// Entry returns the stream labels and structured metadata the config sends
// for a journal entry with these fields (journald names, MESSAGE excluded or
// not: it is the line, never a label). keep is false when a rule dropped the
// entry or no label is left (Alloy then sends nothing).
func (aj *AlloyJournal) Entry(fields map[string]string) (labels, metadata map[string]string, keep bool) {
	ls := map[string]string{}
	for k, v := range aj.StaticLabels {
		ls[k] = v
	}
	for k, v := range fields {
		if strings.HasPrefix(k, "__") { // cursor and timestamps are not fields
			continue
		}
		if k == "PRIORITY" {
			if kw, ok := priorityKeywords[v]; ok {
				ls["__journal_priority_keyword"] = kw
			} else {
				ls["__journal_priority_keyword"] = v
			}
		}
		ls["__journal_"+strings.ToLower(k)] = v
	}
	for _, r := range aj.Rules {
		vals := make([]string, len(r.SourceLabels))
		for i, s := range r.SourceLabels {
			vals[i] = ls[s]
		}
		val := strings.Join(vals, r.Separator)
		switch r.Action {
		case "replace":
			m := r.re.FindStringSubmatchIndex(val)
			if m == nil {
				continue
			}
			res := string(r.re.ExpandString(nil, r.Replacement, val, m))
			if res == "" {
				delete(ls, r.TargetLabel)
			} else {
				ls[r.TargetLabel] = res
			}
		case "keep":
			if !r.re.MatchString(val) {
				return nil, nil, false
			}
		case "drop":
			if r.re.MatchString(val) {
				return nil, nil, false
			}
		case "labeldrop", "labelkeep":
			for k := range ls {
				if r.re.MatchString(k) == (r.Action == "labeldrop") {
					delete(ls, k)
				}
			}
		}
	}
	for k := range ls {
		if strings.HasPrefix(k, "__") {
			delete(ls, k)
		}
	}
	if len(ls) == 0 {
		return nil, nil, false
	}
	md := map[string]string{}
	names := make([]string, 0, len(aj.Metadata))
	for n := range aj.Metadata {
		names = append(names, n)
	}
	sort.Strings(names)
	var moved []string
	for _, n := range names {
		if v, ok := ls[aj.Metadata[n]]; ok {
			md[n] = v
			moved = append(moved, aj.Metadata[n])
		}
	}
	for _, k := range moved {
		delete(ls, k)
	}
	return ls, md, true
}
