package tracker_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// TestTorchReal feeds each section of the real torch 2.11 failures captured
// on an H200 (../shared/torch-real) to a vLLM attempt, as a vLLM worker
// prints them, and checks the verdict each one must get.
func TestTorchReal(t *testing.T) {
	want := map[string]domain.Verdict{
		"dynamo_constraint":           domain.VerdictDynamoConstraint,
		"dynamo_constraint_fullgraph": domain.VerdictDynamoConstraint,
		"oom_graph_capture":           domain.VerdictOOMGraphCapture, // CUDA error: out of memory at capture_begin
		// "Offset increment outside graph capture" is no OOM; an exception
		// that ends the output is a failure no rule names (spec).
		"oom_inside_capture":  domain.VerdictUnknownFailure,
		"oom_plain_10.70GiB":  domain.VerdictOOMWeights, // no phase marker: still loading
		"oom_zero_free_50MiB": domain.VerdictOOMWeights,
	}
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	needShared(t, filepath.Join(sharedDir, "torch-real"))
	files, _ := filepath.Glob(filepath.Join(sharedDir, "torch-real", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no torch-real files")
	}
	seen := 0
	for _, f := range files {
		for name, lines := range sections(t, f) {
			wantV, ok := want[name]
			if !ok {
				t.Errorf("%s: unexpected section %q", f, name)
				continue
			}
			seen++
			tr := tracker.New(set, tracker.Options{})
			start := time.Date(2026, 11, 29, 6, 20, 0, 0, time.UTC)
			add := func(i int, msg string) {
				tr.Add(domain.Entry{Cursor: "c" + string(rune('a'+i%26)), Time: start.Add(time.Duration(i) * time.Millisecond),
					Message: msg, Source: f + "#" + name})
			}
			add(0, "(EngineCore pid=1) INFO 11-29 06:20:00 [core.py:96] Initializing a V1 LLM engine (v0.19.2) with config: model='/models'")
			for i, l := range lines {
				add(i+1, "(Worker_TP0 pid=2) "+l)
			}
			tr.Finish()
			as := tr.Attempts()
			if len(as) != 1 {
				t.Errorf("%s %s: %d attempts", filepath.Base(f), name, len(as))
				continue
			}
			if as[0].Verdict != wantV {
				t.Errorf("%s %s: verdict %s, want %s (evidence %v)", filepath.Base(f), name, as[0].Verdict, wantV, as[0].Evidence)
			}
			if wantV == domain.VerdictDynamoConstraint && !evidenceHas(as[0], "specialized it to be a constant (3)") {
				t.Errorf("%s %s: the constant is not in the evidence", filepath.Base(f), name)
			}
		}
	}
	if seen < 10 {
		t.Errorf("only %d sections checked", seen)
	}
}

// sections splits a torch-real file on its "=== BEGIN name" / "=== END name" lines.
func sections(t *testing.T, path string) map[string][]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	cur := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "=== BEGIN "):
			cur = strings.TrimPrefix(l, "=== BEGIN ")
		case strings.HasPrefix(l, "=== END "):
			cur = ""
		case cur != "":
			out[cur] = append(out[cur], l)
		}
	}
	return out
}
