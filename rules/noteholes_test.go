package rules

import (
	"regexp"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
)

// noteHole is what a note looks like where a template slot had nothing to
// say: "asked for , about", "(kv_cache_memory_bytes ?)", "at shape .".
var noteHole = regexp.MustCompile(`\?[).,;]|\(\?|\s\?\s|\s\?$|\w ,|for [,.]|shape [,.]|\(\s*\)|\s[,.]\s|: [,.]`)

// TestNotesHaveNoHoles renders every rule's note for every engine with no
// shape known and the rule's own captures (a match sets them): each must
// still read as prose, never with an empty or "?" slot.
func TestNotesHaveNoHoles(t *testing.T) {
	set, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	engines := []string{"vllm", "sglang", "llamacpp", "ollama", "tgi", "trtllm", "lmdeploy", "exllama", "halogen", "gufo", "unknown"}
	for _, r := range set.Rules() {
		if r.note == nil {
			continue
		}
		for _, e := range engines {
			caps := map[string]string{}
			if r.match != nil {
				for _, name := range r.match.SubexpNames() {
					if name != "" {
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
			note := r.RenderNote(NoteData{Rule: r.ID, Verdict: verdict, Phase: string(domain.PhaseKVAlloc), Engine: e,
				Unit: "engine.service", Captures: caps, Shape: domain.Shape{}, Line: "the decisive line", Flags: flags})
			if loc := noteHole.FindStringIndex(note); loc != nil {
				lo, hi := max(loc[0]-40, 0), min(loc[1]+40, len(note))
				t.Errorf("%s (%s): hole at %q", r.ID, e, note[lo:hi])
				break
			}
		}
	}
}

// TestNotesSpeakTheEnginesFlags: the KV OOM note of each engine names the
// settings its operator changes, with the values the log stated.
func TestNotesSpeakTheEnginesFlags(t *testing.T) {
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
		"llamacpp": {"--ctx-size 131072, --parallel 4", "--cache-type-k/v"},
		"sglang":   {"--context-length 131072, --max-running-requests 4", "--mem-fraction-static"},
		"vllm":     {"--max-model-len 131072, --max-num-seqs 4", "--gpu-memory-utilization"},
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
