package judge

import (
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// TestShapeFromEveryArgsForm: vLLM prints its arguments as argparse's
// Namespace (older servers), as a dict of the non-default ones (newer),
// and in the engine config; each gives the shape, and an argument left at
// None gives nothing.
func TestShapeFromEveryArgsForm(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		line string
		want map[string]any
	}{
		"Namespace": {"INFO 10-01 09:12:35 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='Qwen/Qwen3-8B', max_model_len=8192, max_num_seqs=16, gpu_memory_utilization=0.9, served_model_name=None)",
			map[string]any{"model": "Qwen/Qwen3-8B", "max_model_len": int64(8192), "max_num_seqs": int64(16), "gpu_memory_utilization": 0.9}},
		"Namespace in journalctl's short output": {"Oct 01 09:12:35 gpu1 vllm[123]: INFO 10-01 09:12:35 [api_server.py:1044] args: Namespace(model='m', max_model_len=None, max_num_seqs=4)",
			map[string]any{"model": "m", "max_num_seqs": int64(4)}},
		"non-default args": {"(APIServer pid=1) INFO 10-01 09:12:35 [utils.py:326] non-default args: {'model': 'm', 'max_model_len': 4096, 'max_num_seqs': 2}",
			map[string]any{"model": "m", "max_model_len": int64(4096), "max_num_seqs": int64(2)}},
	} {
		t.Run(name, func(t *testing.T) {
			j := New(set, "vllm", Options{})
			j.Line(c.line, domain.Evidence{Time: time.Unix(0, 0), Message: c.line})
			a := j.Judge(&domain.Attempt{}, End{Text: true})
			for k, v := range c.want {
				if got := a.Shape[k]; got != v {
					t.Errorf("%s = %#v, want %#v", k, got, v)
				}
			}
			if _, ok := a.Shape["max_model_len"]; ok && c.want["max_model_len"] == nil {
				t.Errorf("max_model_len = %v from None", a.Shape["max_model_len"])
			}
			if _, ok := a.Shape["served_model_name"]; ok {
				t.Errorf("served_model_name = %v from None", a.Shape["served_model_name"])
			}
		})
	}
}
