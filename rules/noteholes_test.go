package rules

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

// noteHole is what a note looks like where a template slot had nothing to
// say: "asked for , about", "(kv_cache_memory_bytes ?)", "at shape .".
var noteHole = regexp.MustCompile(`\?[).,;]|\(\?|\s\?\s|\s\?$|\w ,|for [,.]|shape [,.]|\(\s*\)|\s[,.]\s|: [,.]`)

// noteShapes are the shapes notes are rendered with: none known, each spec
// key alone (a template must not lean on a neighbour key), and all of them.
func noteShapes() map[string]domain.Shape {
	value := map[string]any{
		domain.ShapeModel: "/models/m", domain.ShapeServedModelName: "m", domain.ShapeMaxModelLen: int64(32768),
		domain.ShapeMaxNumSeqs: int64(4), domain.ShapeMaxNumBatchedTokens: int64(2048), domain.ShapeGPUMemoryUtilization: 0.9,
		domain.ShapeKVCacheDtype: "fp8", domain.ShapeKVCacheMemoryBytes: int64(8 << 30), domain.ShapeKVCacheTokens: int64(131072),
		domain.ShapeMaxConcurrency: 4.0, domain.ShapeTensorParallelSize: int64(2), domain.ShapeEnforceEager: true,
		domain.ShapeSpeculative: "ngram", domain.ShapeQuantization: "awq",
	}
	shapes := map[string]domain.Shape{"none": {}}
	all := domain.Shape{}
	for _, k := range domain.SpecShapeKeys {
		shapes[k] = domain.Shape{k: value[k]}
		all[k] = value[k]
	}
	shapes["all"] = all
	return shapes
}

// TestNotesHaveNoHoles renders every rule's note for every engine, with
// every capture the rule has set or none set (an optional group that did
// not match) and each shape of noteShapes: each must still read as prose,
// never with an empty or "?" slot.
func TestNotesHaveNoHoles(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	engines := []string{"vllm", "sglang", "llamacpp", "ik_llamacpp", "ollama", "tgi", "trtllm", "lmdeploy", "exllama", "halogen", "gufo", "unknown"}
	for _, e := range set.Engines() {
		if !slices.Contains(engines, e.Name) {
			engines = append(engines, e.Name)
		}
	}
	shapes := noteShapes()
	rendered := 0
	for _, r := range set.Rules() {
		if r.note == nil {
			continue
		}
	engine:
		for _, e := range engines {
			for _, withCaps := range []bool{true, false} {
				// Without captures: the groups a match may leave unset
				// (optional, in one branch of an alternation, or able to
				// match nothing) are unset, the others set.
				caps := map[string]string{}
				if r.match != nil {
					optional := optionalGroups(t, r.match.String())
					for _, name := range r.match.SubexpNames() {
						if name != "" && (withCaps || !optional[name]) {
							caps[name] = "7" // a number, a size or a name: each reads
						}
					}
				}
				verdict := string(r.Verdict)
				if r.End { // an end rule's note speaks of the attempt's verdict and its end facts
					verdict = string(domain.VerdictEngineDied)
					caps["restart_counter_after"], caps["seconds_ready_to_failure"] = "4", "525"
				}
				var flags map[string]string
				if eng := set.Engine(e); eng != nil {
					flags = eng.Flags
				}
				for name, shape := range shapes {
					note := r.RenderNote(NoteData{Rule: r.ID, Verdict: verdict, Phase: string(domain.PhaseKVAlloc), Engine: e,
						Unit: "engine.service", Captures: caps, Shape: shape, Line: "the decisive line", Flags: flags})
					rendered++
					if loc := noteHole.FindStringIndex(note); loc != nil {
						lo, hi := max(loc[0]-40, 0), min(loc[1]+40, len(note))
						t.Errorf("%s (%s, captures %v, shape %s): hole at %q", r.ID, e, withCaps, name, note[lo:hi])
						continue engine
					}
				}
			}
		}
	}
	if rendered < 1000 {
		t.Errorf("only %d notes rendered", rendered)
	}
}

// TestNotesSpeakTheEnginesFlags: the KV OOM note of each engine names the
// settings its operator changes, with the values the log stated.
func TestNotesSpeakTheEnginesFlags(t *testing.T) {
	t.Run("generic KV rules", func(t *testing.T) { genericKVNotes(t) })
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	var kv *Rule
	for _, r := range set.Rules() {
		if r.ID == "common.oom_kv_alloc" {
			kv = r
		}
	}
	if kv == nil {
		t.Fatal("no common.oom_kv_alloc")
	}
	shape := domain.Shape{"max_model_len": int64(131072), "max_num_seqs": int64(4)}
	for engine, want := range map[string][]string{
		"llamacpp": {"--ctx-size 131072, --parallel 4", "--cache-type-k/v", "-ngl"},
		"sglang":   {"--context-length 131072, --max-running-requests 4", "--mem-fraction-static"},
		"vllm":     {"--max-model-len 131072, --max-num-seqs 4", "--gpu-memory-utilization", "--kv-cache-dtype fp8"},
		"ollama":   {"OLLAMA_CONTEXT_LENGTH=131072, OLLAMA_NUM_PARALLEL=4"},
	} {
		note := kv.RenderNote(NoteData{Engine: engine, Captures: map[string]string{"alloc": "16.00 GiB"}, Shape: shape,
			Flags: set.Engine(engine).Flags})
		for _, w := range want {
			if !strings.Contains(note, w) {
				t.Errorf("%s: %q lacks %q", engine, note, w)
			}
		}
	}
}

// optionalGroups are the named groups of expr a match may leave empty: under
// ?, * or {0,n}, in a branch of an alternation, or able to match "".
func optionalGroups(t *testing.T, expr string) map[string]bool {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	var walk func(r *syntax.Regexp, optional bool)
	walk = func(r *syntax.Regexp, optional bool) {
		switch r.Op {
		case syntax.OpStar, syntax.OpQuest:
			optional = true
		case syntax.OpRepeat:
			optional = optional || r.Min == 0
		case syntax.OpAlternate:
			optional = optional || len(r.Sub) > 1
		case syntax.OpCapture:
			if r.Name != "" {
				empty := regexp.MustCompile(`^(?:` + r.Sub[0].String() + `)$`).MatchString("")
				out[r.Name] = out[r.Name] || optional || empty
			}
		}
		for _, sub := range r.Sub {
			walk(sub, optional)
		}
	}
	walk(re, false)
	return out
}

// genericKVNotes: the generic KV-cache rules say the engine's own
// settings and numbers, for any engine.
func genericKVNotes(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	shape := domain.Shape{"max_model_len": int64(131072), "max_num_seqs": int64(4)}
	for _, id := range []string{"generic.raised_in_kv_cache", "generic.host_oom_kv_alloc"} {
		var r *Rule
		for _, x := range set.Rules() {
			if x.ID == id {
				r = x
			}
		}
		if r == nil {
			t.Fatalf("no %s", id)
		}
		for engine, want := range map[string]string{
			"llamacpp": "(now --ctx-size 131072, --parallel 4)",
			"sglang":   "(now --context-length 131072, --max-running-requests 4)",
			"ollama":   "(now OLLAMA_CONTEXT_LENGTH=131072, OLLAMA_NUM_PARALLEL=4)",
		} {
			note := r.RenderNote(NoteData{Engine: engine, Shape: shape, Line: "x", Flags: set.Engine(engine).Flags})
			if !strings.Contains(note, want) {
				t.Errorf("%s for %s: %q lacks %q", id, engine, note, want)
			}
		}
	}
}
