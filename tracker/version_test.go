package tracker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
	"github.com/llmfleet/analyzer/tracker"
)

// TestAttemptVersion: an attempt's Version stands while nothing of it
// changes and moves with its lines, its lifecycle, a zone learned from
// another attempt of its host and a rule reload; the other attempt's
// version stands meanwhile.
func TestAttemptVersion(t *testing.T) {
	set, err := rules.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	tr := tracker.New(set, tracker.Options{KeepLog: true})
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := 0
	next := func() (string, time.Time) { n++; return fmt.Sprint("c", n), at.Add(time.Duration(n) * time.Second) }
	line := func(unit, msg string) {
		c, ts := next()
		tr.Add(domain.Entry{Cursor: c, Time: ts, Host: "h", Unit: unit, InvocationID: "inv-" + unit, PID: 7,
			Identifier: "vllm", Message: msg, Journal: true, Fields: map[string]string{"_TRANSPORT": "stdout"}})
	}
	versions := func() map[string]uint64 {
		t.Helper()
		out := map[string]uint64{}
		for _, a := range tr.Attempts() {
			out[a.Unit] = a.Version
		}
		return out
	}
	// No line states the host's local time yet.
	line("a.service", "$ vllm serve /models/qwen --max-model-len 8192")
	line("b.service", "$ vllm serve /models/llama --max-model-len 4096")
	v0 := versions()
	if len(v0) != 2 || v0["a.service"] == 0 || v0["b.service"] == 0 || v0["a.service"] == v0["b.service"] {
		t.Fatalf("versions of two new attempts: %v", v0)
	}
	if v := versions(); v["a.service"] != v0["a.service"] || v["b.service"] != v0["b.service"] {
		t.Fatalf("judging again without input moved the versions: %v, then %v", v0, v)
	}
	// Nor is an unchanged attempt judged again: the same one comes back.
	if x, y := tr.Attempts(), tr.Attempts(); x[0] != y[0] || x[1] != y[1] {
		t.Fatal("an attempt without a new version was judged again")
	}

	// A line of b stating its local time two hours ahead of UTC: b moves,
	// and a too, since its times are now shown in that zone.
	line("b.service", "INFO 12-01 12:00:03 [core.py:60] Initializing a V1 LLM engine (v0.9.1)")
	v1 := versions()
	if v1["a.service"] <= v0["a.service"] || v1["b.service"] <= v0["b.service"] {
		t.Fatalf("after b learned the host's zone: %v, before %v", v1, v0)
	}
	if a := tr.Attempts()[0]; a.Unit != "a.service" || a.StartedAt.Format("-07:00") != "+02:00" {
		t.Fatalf("a is not shown in the learned zone: %s %s", a.Unit, a.StartedAt)
	}

	// A line of a moves a alone; b is not judged again.
	before := tr.Attempts()
	line("a.service", "INFO 12-01 12:00:04 [core.py:60] Initializing a V1 LLM engine (v0.9.1)")
	after := tr.Attempts()
	v2 := versions()
	if v2["a.service"] <= v1["a.service"] || v2["b.service"] != v1["b.service"] {
		t.Fatalf("after a line of a: %v, before %v", v2, v1)
	}
	if after[0] == before[0] || after[1] != before[1] || after[0].Lines != before[0].Lines+1 || after[0].EngineVersion != "0.9.1" {
		t.Fatalf("after a line of a: a judged again %v (lines %d, then %d; engine version %q), b kept %v",
			after[0] != before[0], before[0].Lines, after[0].Lines, after[0].EngineVersion, after[1] == before[1])
	}

	// systemd stopping b moves b alone.
	c, ts := next()
	tr.Add(domain.Entry{Cursor: c, Time: ts, Host: "h", PID: 1, Identifier: "systemd", Message: "Stopping b.service...",
		Journal: true, Fields: map[string]string{"UNIT": "b.service", "INVOCATION_ID": "inv-b.service",
			"JOB_TYPE": "stop", "MESSAGE_ID": "de5b426a63be47a7b6ac3eaac82e2f6f", "_TRANSPORT": "journal"}})
	v3 := versions()
	if v3["b.service"] <= v2["b.service"] || v3["a.service"] != v2["a.service"] {
		t.Fatalf("after b's stop job: %v, before %v", v3, v2)
	}
	if !tr.Attempts()[1].StopRequested {
		t.Fatal("b's stop job was not recorded")
	}

	// A rule reload may change notes and end rules: every attempt moves.
	tr.SetRules(set)
	v4 := versions()
	if v4["a.service"] <= v3["a.service"] || v4["b.service"] <= v3["b.service"] {
		t.Fatalf("after a rule reload: %v, before %v", v4, v3)
	}
}
