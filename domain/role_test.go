package domain

import "testing"

func TestEvidenceRoleText(t *testing.T) {
	for _, tc := range []struct {
		role EvidenceRole
		text string
	}{
		{0, ""},
		{RoleReady, "ready"},
		{RoleExit | RoleEnd, "exit,end"},
		{RoleEnd | RoleFinding | RoleLastError, "finding,last_error,end"},
		{RoleFinding | RoleReady | RoleMilestone | RoleLastError | RoleException | RoleDeath | RoleCandidate | RoleExit | RoleEnd,
			"finding,ready,milestone,last_error,exception,death,candidate,exit,end"},
	} {
		if got := tc.role.String(); got != tc.text {
			t.Errorf("%d: String() = %q, want %q", tc.role, got, tc.text)
		}
		back, err := ParseEvidenceRole(tc.text)
		if err != nil || back != tc.role {
			t.Errorf("ParseEvidenceRole(%q) = %d, %v; want %d", tc.text, back, err, tc.role)
		}
	}
	if r, err := ParseEvidenceRole("ready,nonsense"); err == nil || r != 0 {
		t.Errorf(`ParseEvidenceRole("ready,nonsense") = %d, %v; want 0 and an error`, r, err)
	}
	if !(RoleExit | RoleEnd).Has(RoleEnd) || RoleExit.Has(RoleEnd) || RoleExit.Has(0) {
		t.Error("Has: exit,end has end; exit has neither end nor the empty set")
	}
}
