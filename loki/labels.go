// Package loki speaks Loki's push protocol both ways, with the protobuf
// types of github.com/grafana/loki/pkg/push (Apache-2.0; the AGPL Loki
// module itself is never imported):
//
//   - Receiver serves POST /loki/api/v1/push as Loki does (snappy protobuf
//     or JSON, optional gzip/deflate), so Alloy's loki.write and Promtail
//     can ship a host's journal to the analyzer. Stream labels and
//     structured metadata are mapped back to journald field names, each
//     line becomes an ingest.Record, and an ingest.Assembler per host
//     reassembles split lines exactly as for a journal file.
//   - Pusher sends every finding to a Loki as one log line, batched,
//     retried with backoff on 429/5xx, with the finding's own time as the
//     entry timestamp so that a retried batch is idempotent.
//   - QueryRange reads past log entries back from Loki's query_range API
//     (replay --from-loki), mapped to journal records as a push is.
package loki

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/grafana/loki/pkg/push"
)

// Loki's own defaults of its label limits (limits_config
// max_label_name_length, max_label_value_length and
// max_label_names_per_series,
// https://grafana.com/docs/loki/latest/configure/#limits_config): a stream
// over one is refused as Loki refuses it. They also bound what one stream
// costs the analyzer, whatever the number of its entries.
const (
	MaxLabelNameLength     = 1024 // bytes of a label name
	MaxLabelValueLength    = 2048 // bytes of a label value
	MaxLabelNamesPerSeries = 15   // labels of one stream
)

// LabelLimitError is a stream's label set over one of Loki's limits.
type LabelLimitError struct {
	Limit string // Loki's name of the limit: max_label_value_length, ...
	Label string // the label concerned (cut to 60 bytes); "" for a count
	Got   int    // bytes, or labels for max_label_names_per_series
	Max   int
}

func (e *LabelLimitError) Error() string {
	if e.Label == "" {
		return fmt.Sprintf("stream has %d label names, over %s (%d)", e.Got, e.Limit, e.Max)
	}
	return fmt.Sprintf("label %.60q: %d bytes, over %s (%d)", e.Label, e.Got, e.Limit, e.Max)
}

// CheckLabelLimits returns a *LabelLimitError when a stream's labels break
// one of Loki's default limits (MaxLabelNameLength, MaxLabelValueLength,
// MaxLabelNamesPerSeries), nil otherwise.
func CheckLabelLimits(ls push.LabelsAdapter) error {
	if len(ls) > MaxLabelNamesPerSeries {
		return &LabelLimitError{Limit: "max_label_names_per_series", Got: len(ls), Max: MaxLabelNamesPerSeries}
	}
	for _, l := range ls {
		if len(l.Name) > MaxLabelNameLength {
			return &LabelLimitError{Limit: "max_label_name_length", Label: l.Name, Got: len(l.Name), Max: MaxLabelNameLength}
		}
		if len(l.Value) > MaxLabelValueLength {
			return &LabelLimitError{Limit: "max_label_value_length", Label: l.Name, Got: len(l.Value), Max: MaxLabelValueLength}
		}
	}
	return nil
}

// ParseLabels parses a stream's label set in Prometheus selector syntax, as
// Promtail and Alloy write it: {job="x", unit="vllm.service"}. Values are
// Go-quoted ("…" with escapes, or `…` raw); only the = matcher is allowed.
// A repeated name keeps its last value.
func ParseLabels(s string) (push.LabelsAdapter, error) {
	p := labelParser{s: s}
	p.space()
	if !p.eat('{') {
		return nil, p.errorf("want '{'")
	}
	var out push.LabelsAdapter
	for {
		p.space()
		if p.eat('}') {
			break
		}
		if len(out) > 0 {
			if !p.eat(',') {
				return nil, p.errorf("want ',' or '}'")
			}
			p.space()
			if p.eat('}') { // trailing comma
				break
			}
		}
		name := p.name()
		if name == "" {
			return nil, p.errorf("want a label name")
		}
		p.space()
		if !p.eat('=') {
			return nil, p.errorf("want '=' after %s", name)
		}
		if p.peek() == '=' || p.peek() == '~' {
			return nil, p.errorf("only the = matcher is allowed in a stream's labels")
		}
		p.space()
		val, err := p.quoted()
		if err != nil {
			return nil, err
		}
		out = append(out, push.LabelAdapter{Name: name, Value: val})
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.errorf("unexpected text after '}'")
	}
	return dedupeLabels(out), nil
}

// dedupeLabels keeps the last value of a repeated name, sorted by name.
func dedupeLabels(ls push.LabelsAdapter) push.LabelsAdapter {
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].Name < ls[j].Name })
	out := ls[:0]
	for i, l := range ls {
		if i+1 < len(ls) && ls[i+1].Name == l.Name {
			continue
		}
		out = append(out, l)
	}
	return out
}

// FormatLabels renders labels the way Promtail does: sorted by name,
// name=%q, joined with ", ", in braces. Empty values are left out (Loki
// treats an empty label as absent).
func FormatLabels(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k, v := range labels {
		if v != "" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
	}
	b.WriteByte('}')
	return b.String()
}

// ValidLabelName reports whether s is a valid Prometheus/Loki label name.
func ValidLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

type labelParser struct {
	s string
	i int
}

func (p *labelParser) errorf(format string, args ...any) error {
	return fmt.Errorf("labels %.60q: at %d: %s", p.s, p.i, fmt.Sprintf(format, args...))
}

func (p *labelParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *labelParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *labelParser) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

func (p *labelParser) name() string {
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (p.i > start && c >= '0' && c <= '9') {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i]
}

var errUnterminated = errors.New("unterminated string")

// quoted reads a "…" or `…` string and returns its value.
func (p *labelParser) quoted() (string, error) {
	q := p.peek()
	if q != '"' && q != '`' {
		return "", p.errorf("want a quoted value")
	}
	start := p.i
	p.i++
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '\\' && q == '"' {
			p.i += 2
			continue
		}
		p.i++
		if c == q {
			v, err := strconv.Unquote(p.s[start:p.i])
			if err != nil {
				return "", p.errorf("bad quoted value: %v", err)
			}
			return v, nil
		}
	}
	return "", p.errorf("%v", errUnterminated)
}
