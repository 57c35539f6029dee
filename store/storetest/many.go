package storetest

import (
	"fmt"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// ManyStart is the start of Many's first attempt; each later pair of
// attempts starts one minute after the previous pair.
var ManyStart = time.Date(2026, 9, 1, 0, 0, 0, 0, time.FixedZone("", -7*3600))

// ManyUnknownStart is how many of Many's attempts (the last ones) have an
// unknown start.
const ManyUnknownStart = 10

// ManyVerdicts is the cycle of verdicts of Many's attempts: attempt i has
// ManyVerdicts[i%len(ManyVerdicts)].
var ManyVerdicts = []domain.Verdict{
	domain.VerdictReady, domain.VerdictOOMGraphCapture, domain.VerdictUnknownFailure,
	domain.VerdictStopped, domain.VerdictOOMKVAlloc,
}

// ManyHosts and ManyEngines are the cycles of hosts and engines of Many's
// attempts (attempt i has ManyHosts[i%3] and ManyEngines[i%3]).
var (
	ManyHosts   = []string{"dankserver", "rackbox", "dankclaw"}
	ManyEngines = []string{"vllm", "sglang", "llamacpp"}
)

// ManyInvocation is the invocation id of Many's attempt i: 32 hex digits
// whose first 8 differ between attempts.
func ManyInvocation(i int) string {
	return fmt.Sprintf("%08x%024x", uint32(i)*2654435761, i)
}

// ManyContainerID is the container id of Many's attempt i (64 hex digits).
func ManyContainerID(i int) string {
	return fmt.Sprintf("c%07x%056x", uint32(i)*2246822519, i)
}

// Many returns n small attempts for tests of lists and paging: attempt i
// runs on ManyHosts[i%3] with ManyEngines[i%3], unit "engine-<i%5>.service",
// verdict ManyVerdicts[i%5] (a failure has its verdict as a finding); every
// 7th attempt also has the finding crash_loop. Attempts 2k and 2k+1 start
// at the same time, ManyStart + k minutes (ties broken by id), except the
// last ManyUnknownStart, whose start is unknown.
func Many(n int) []*domain.Attempt {
	out := make([]*domain.Attempt, 0, n)
	for i := range n {
		v := ManyVerdicts[i%len(ManyVerdicts)]
		a := &domain.Attempt{
			Host: ManyHosts[i%3], Unit: fmt.Sprintf("engine-%d.service", i%5), InvocationID: ManyInvocation(i),
			Container: fmt.Sprintf("box-%d", i), ContainerID: ManyContainerID(i),
			Engine: ManyEngines[i%3], Phase: domain.PhaseReady, Verdict: v, Shape: domain.Shape{},
			Lines: 10 + i%7,
		}
		a.ID = a.Host + "/" + a.Unit + "/" + a.InvocationID
		if i < n-ManyUnknownStart {
			a.StartedAt = ManyStart.Add(time.Duration(i/2) * time.Minute)
			a.EndedAt = a.StartedAt.Add(30 * time.Second)
		}
		var when time.Time
		if !a.StartedAt.IsZero() {
			when = a.StartedAt.Add(20 * time.Second)
		}
		if v.IsFailure() {
			a.Phase, a.Rule = domain.PhaseKVAlloc, "test."+string(v)
			a.Findings = append(a.Findings, domain.Finding{ID: string(v), Rule: a.Rule, Severity: domain.SeverityCritical,
				Phase: a.Phase, Time: when})
		}
		if i%7 == 0 {
			a.Findings = append(a.Findings, domain.Finding{ID: domain.FindingCrashLoop, Rule: "systemd.crash_loop",
				Severity: domain.SeverityWarning, Phase: a.Phase, Time: when})
		}
		out = append(out, a)
	}
	return out
}
