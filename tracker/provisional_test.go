package tracker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// tgiWaiting writes a TGI launcher log whose shard 0 waits n times, 10 s
// apart (launcher/src/main.rs logs "Waiting for shard to be ready..." every
// 10 s), then, when ready is set, gets ready and the router connects.
func tgiWaiting(t *testing.T, n int, ready bool) string {
	t.Helper()
	at := time.Date(2024, 5, 1, 1, 16, 52, 0, time.UTC)
	stamp := func() string { return at.Format("2006-01-02T15:04:05.000000Z") }
	var b strings.Builder
	fmt.Fprintf(&b, "%s  INFO text_generation_launcher: Args { model_id: \"bigscience/bloom-560m\", sharded: None }\n", stamp())
	fmt.Fprintf(&b, "%s  INFO shard-manager: text_generation_launcher: Starting shard rank=0\n", stamp())
	for range n {
		at = at.Add(10 * time.Second)
		fmt.Fprintf(&b, "%s  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready... rank=0\n", stamp())
	}
	if ready {
		at = at.Add(3 * time.Second)
		fmt.Fprintf(&b, "%s  INFO shard-manager: text_generation_launcher: Shard ready in %.1fs rank=0\n", stamp(), float64(n*10+3))
		fmt.Fprintf(&b, "%s  INFO text_generation_router::server: router/src/server.rs:1812: Connected\n", stamp())
	}
	p := filepath.Join(t.TempDir(), "tgi.log")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProvisionalTimeoutWithdrawnByProgress: a TGI shard stuck for 15
// minutes is a timeout (tgi.shard_not_ready counts 90 waits), but one that
// then gets ready was only slow: the provisional verdict is withdrawn.
func TestProvisionalTimeoutWithdrawnByProgress(t *testing.T) {
	for _, c := range []struct {
		name         string
		waits        int
		ready        bool
		verdict      domain.Verdict
		phase        domain.Phase
		findings     int
		evidenceText string
	}{
		{"hung", 100, false, domain.VerdictTimeout, domain.PhaseWeights, 1, "Waiting for shard to be ready... rank=0"},
		{"slow then ready", 100, true, domain.VerdictReady, domain.PhaseReady, 0, "Connected"},
		{"short wait", 89, false, domain.VerdictRunning, domain.PhaseWeights, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			as := analyzeFile(t, tgiWaiting(t, c.waits, c.ready))
			if len(as) != 1 {
				t.Fatalf("%d attempts, want 1", len(as))
			}
			a := as[0]
			if a.Engine != "tgi" || a.Verdict != c.verdict || a.Phase != c.phase || len(a.Findings) != c.findings {
				t.Fatalf("engine %s verdict %s phase %s findings %v; want tgi %s %s and %d findings",
					a.Engine, a.Verdict, a.Phase, a.FindingIDs(), c.verdict, c.phase, c.findings)
			}
			if c.verdict == domain.VerdictReady && len(a.Context) != 0 {
				t.Errorf("the withdrawn verdict left %d context lines", len(a.Context))
			}
			if c.evidenceText == "" {
				return
			}
			found := false
			for _, e := range a.Evidence {
				found = found || strings.Contains(e.Message, c.evidenceText)
			}
			if !found {
				t.Errorf("no evidence line holds %q: %+v", c.evidenceText, a.Evidence)
			}
		})
	}
}
