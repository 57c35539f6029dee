package rules

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/expr-lang/expr"

	"github.com/llmfleet/analyzer/domain"
)

// LineEnv is what a line rule's `when` expression sees.
type LineEnv struct {
	Line         string            `expr:"line"`
	Phase        string            `expr:"phase"`
	Engine       string            `expr:"engine"`
	Unit         string            `expr:"unit"`
	ReachedReady bool              `expr:"reached_ready"`
	Captures     map[string]string `expr:"captures"`
	Shape        map[string]any    `expr:"shape"`
	// Error: the line reports an error (an exception or death line, or
	// error words in a line not logged below error level).
	Error bool `expr:"error_line"`
	// Frames are the frames of the traceback an exception line ends, one
	// "file:function" per line, outermost first ("" for other lines).
	Frames string `expr:"frames"`
	// Usage: the line opens an argument parser's usage or help text (the
	// judge gives the rules only that line of the block).
	Usage bool `expr:"usage_text"`
	// Time is the line's timestamp (zero when unknown), for count windows;
	// `when` does not see it.
	Time time.Time `expr:"-"`
}

// EndEnv is what an end rule's `when` expression sees: the attempt as it
// ended.
type EndEnv struct {
	Verdict      string `expr:"verdict" json:"verdict"`
	Phase        string `expr:"phase" json:"phase"`
	Failed       bool   `expr:"failed" json:"failed"`
	Engine       string `expr:"engine" json:"engine"`
	Unit         string `expr:"unit" json:"unit"`
	EndedBy      string `expr:"ended_by" json:"ended_by"`
	ExitCode     string `expr:"exit_code" json:"exit_code"`
	ExitStatus   int    `expr:"exit_status" json:"exit_status"`
	HasExit      bool   `expr:"has_exit_status" json:"has_exit_status"`
	ReachedReady bool   `expr:"reached_ready" json:"reached_ready"`
	// SecondsReadyToFailure is the time from readiness to the failure
	// (seconds); -1 when either is unknown.
	SecondsReadyToFailure float64 `expr:"seconds_ready_to_failure" json:"seconds_ready_to_failure"`
	// SurvivableSeconds is the survivability window (seconds, default
	// 1800): a death sooner than this after ready makes the boot not
	// survivable.
	SurvivableSeconds   float64        `expr:"survivable_seconds" json:"survivable_seconds"`
	RestartCounterAfter int            `expr:"restart_counter_after" json:"restart_counter_after"`
	Findings            []string       `expr:"findings" json:"findings"`
	Shape               map[string]any `expr:"shape" json:"shape"`
}

// exprFuncs are helpers available to `when` expressions:
// bytes("10.70 GiB") → 1.1489e10, num(shape.x) → float (0 when absent),
// rank("kv_alloc") → the phase's position in boot order, last_line(frames)
// → the text after the last newline (the innermost frame).
func exprFuncs() []expr.Option {
	return []expr.Option{
		expr.Function("last_line", func(params ...any) (any, error) {
			if s, ok := params[0].(string); ok {
				return lastLine(s), nil
			}
			return params[0], nil // matches answers for it as before
		}, new(func(any) any)),
		expr.Function("bytes", func(params ...any) (any, error) {
			s, _ := params[0].(string)
			b, _ := domain.ParseBytes(s)
			return b, nil
		}, new(func(string) float64)),
		expr.Function("num", func(params ...any) (any, error) {
			f, _ := toFloat(params[0])
			return f, nil
		}, new(func(any) float64)),
		expr.Function("rank", func(params ...any) (any, error) {
			s, _ := params[0].(string)
			return domain.Phase(s).Rank(), nil
		}, new(func(string) int)),
	}
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.ReplaceAll(x, ",", ""), 64)
		return f, err == nil
	}
	return 0, false
}

// NoteData is what a note template sees.
type NoteData struct {
	Rule     string
	Verdict  string
	Phase    string
	Engine   string
	Unit     string
	Captures map[string]string
	Shape    domain.Shape
	Line     string
	// Flags are the engine's names for shape keys (its profile's flags).
	Flags map[string]string
}

// isEnvName reports whether a flag is an environment variable
// (OLLAMA_NUM_PARALLEL): upper-case letters, digits and underscores.
func isEnvName(f string) bool {
	for i := 0; i < len(f); i++ {
		if c := f[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return f != ""
}

// flagName is the engine's flag for a shape key, or the key itself.
func (d NoteData) flagName(key string) string {
	if f := d.Flags[key]; f != "" {
		return f
	}
	return key
}

var noteFuncs = template.FuncMap{
	// shape renders a shape key or "?" when unknown.
	"shape": func(s domain.Shape, key string) string {
		if v := s.String(key); v != "" {
			return v
		}
		return "?"
	},
	"summary": func(s domain.Shape) string { return s.Summary() },
	// flag names a shape key as the engine's operator sets it
	// ("--ctx-size" for llama.cpp's max_model_len).
	"flag": func(d NoteData, key string) string { return d.flagName(key) },
	// settings renders the known values of the given shape keys with the
	// engine's flag names ("--ctx-size 8192, --parallel 4"); "" when none
	// is known, so a note can leave the clause out.
	"settings": func(d NoteData, keys ...string) string {
		var parts []string
		for _, k := range keys {
			if v := d.Shape.String(k); v != "" {
				f := d.flagName(k)
				if isEnvName(f) {
					parts = append(parts, f+"="+v) // HALOGEN_CTX=8192
				} else {
					parts = append(parts, f+" "+v)
				}
			}
		}
		return strings.Join(parts, ", ")
	},
	"gib": func(v any) string {
		f, ok := toFloat(v)
		if !ok {
			return "?"
		}
		return fmt.Sprintf("%.2f GiB", f/(1<<30))
	},
}

// RenderNote fills the rule's note template. A template error yields the
// rule title with the error, so a bad note never hides the verdict.
func (r *Rule) RenderNote(d NoteData) string {
	if r.note == nil {
		return r.Title
	}
	t, err := r.note.parsed()
	if err != nil {
		return fmt.Sprintf("%s (note template error: %v)", r.Title, err)
	}
	b := &cappedBuilder{max: maxNoteBytes}
	if err := t.Execute(b, d); err != nil && !b.full {
		return fmt.Sprintf("%s (note template error: %v)", r.Title, err)
	}
	note := strings.Join(strings.Fields(b.String()), " ")
	if b.full {
		note += " …"
	}
	return note
}

// maxNoteBytes caps a rendered note (a note goes into the journal, Loki and
// every page): a template that ranges over a long capture must not write
// megabytes.
const maxNoteBytes = 4 << 10

// cappedBuilder is a strings.Builder that stops taking bytes at max; the
// template then fails with errNoteFull, which ends its execution early.
type cappedBuilder struct {
	strings.Builder
	max  int
	full bool
}

var errNoteFull = errors.New("note longer than the cap")

func (b *cappedBuilder) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.Builder.Write(p[:max(room, 0)])
		b.full = true
		return max(room, 0), errNoteFull
	}
	return b.Builder.Write(p)
}
