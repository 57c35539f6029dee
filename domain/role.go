package domain

import (
	"fmt"
	"slices"
	"strings"
)

// EvidenceRole is the set of roles an evidence line of an attempt has in the
// judge's state: why the line is in Attempt.Evidence. A line may have
// several (the exit record is also the line that ended the attempt). The
// zero value means not known: lines stored before roles were.
type EvidenceRole uint16

// Evidence roles. The names (EvidenceRole.String) are stored in the
// evidence table's role column; they never change.
const (
	// RoleFinding: a rule's finding cites the line (the verdict's rule, a
	// side finding, an end rule, a finding raised outside the rules).
	RoleFinding EvidenceRole = 1 << iota
	// RoleReady: a readiness or boot-shape line (KV cache size,
	// concurrency) of a ready or running attempt.
	RoleReady
	// RoleMilestone: a line that moved the attempt into warmup or ready (it
	// comes back from the timeline), or a running attempt's last phase-
	// marker line (where its boot got to).
	RoleMilestone
	// RoleLastError: one of the last error-looking lines of an unknown
	// failure.
	RoleLastError
	// RoleException: the fatal exception no rule names that an unknown
	// failure stands on.
	RoleException
	// RoleDeath: the death line (a signal, Killed, a stated exit) that an
	// unknown failure stands on.
	RoleDeath
	// RoleCandidate: a line of a root cause that lost to the verdict.
	RoleCandidate
	// RoleExit: the unit's main-process exit record (systemd's "Main
	// process exited").
	RoleExit
	// RoleEnd: the lifecycle record that ended the attempt (for an
	// attempt still open, its exit record).
	RoleEnd
)

var roleNames = []string{"finding", "ready", "milestone", "last_error", "exception", "death", "candidate", "exit", "end"}

// Has reports whether r holds every role of q.
func (r EvidenceRole) Has(q EvidenceRole) bool { return q != 0 && r&q == q }

// String is the roles' names joined by commas in the order of their
// constants ("" for none): the stored form.
func (r EvidenceRole) String() string {
	var b strings.Builder
	for i, n := range roleNames {
		if r&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(n)
		}
	}
	return b.String()
}

// ParseEvidenceRole reads the stored form of String; "" is no role. An
// unknown name is an error.
func ParseEvidenceRole(s string) (EvidenceRole, error) {
	var r EvidenceRole
	if s == "" {
		return 0, nil
	}
	for _, n := range strings.Split(s, ",") {
		i := slices.Index(roleNames, n)
		if i < 0 {
			return 0, fmt.Errorf("unknown evidence role %q", n)
		}
		r |= 1 << i
	}
	return r, nil
}
