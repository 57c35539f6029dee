package store

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store/storetest"
)

// unknownAttempts returns storetest's attempts plus two more unknown
// failures: one with the same fingerprint as storetest.IDUnknown on
// another host a day later, one with a fingerprint of its own. The OOM
// attempt carries a fingerprint too, which must not make it a group.
func unknownAttempts() (as []*domain.Attempt, fpA, fpB string) {
	as = storetest.Attempts()
	var unknown *domain.Attempt
	for _, a := range as {
		switch a.ID {
		case storetest.IDUnknown:
			unknown = a
		case storetest.IDOOM:
			a.Fingerprint = "deadbeef0000 torch.OutOfMemoryError: HIP out of memory"
		}
	}
	fpA = unknown.Fingerprint
	again := *unknown
	again.ID, again.Host, again.InvocationID = "rackbox/frank-draft.service/2", "rackbox", "2"
	again.StartedAt, again.EndedAt = unknown.StartedAt.Add(24*time.Hour), unknown.EndedAt.Add(24*time.Hour)
	other := *unknown
	other.ID, other.InvocationID, other.Unit = "dankserver/frank-other.service/3", "3", "frank-other.service"
	other.Fingerprint = "0badc0ffee00 RuntimeError: something else at <path>"
	other.StartedAt, other.EndedAt = unknown.StartedAt.Add(48*time.Hour), unknown.EndedAt.Add(48*time.Hour)
	return append(as, &again, &other), fpA, other.Fingerprint
}

func TestUnknownGroups(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	as, fpA, fpB := unknownAttempts()
	if err := db.SaveAttempts(ctx, as, nil); err != nil {
		t.Fatal(err)
	}
	gs, err := db.UnknownGroups(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(gs), gs)
	}
	a, b := gs[0], gs[1]
	if a.Fingerprint != fpA || a.Count != 2 || b.Fingerprint != fpB || b.Count != 1 {
		t.Fatalf("groups %q×%d, %q×%d; want %q×2, %q×1", a.Fingerprint, a.Count, b.Fingerprint, b.Count, fpA, fpB)
	}
	var first time.Time
	for _, x := range as {
		if x.ID == storetest.IDUnknown {
			first = x.StartedAt
		}
	}
	if !a.FirstSeen.Equal(first) || !a.LastSeen.Equal(first.Add(24*time.Hour)) {
		t.Errorf("group A seen %v … %v, want %v … %v", a.FirstSeen, a.LastSeen, first, first.Add(24*time.Hour))
	}
	if _, off := a.FirstSeen.Zone(); off != -7*3600 {
		t.Errorf("first seen lost its source offset: %v", a.FirstSeen)
	}
	if want := []string{"rackbox/frank-draft.service/2", storetest.IDUnknown}; !reflect.DeepEqual(a.AttemptIDs, want) {
		t.Errorf("group A examples %v, want %v (newest first)", a.AttemptIDs, want)
	}
	if want := []string{"dankserver", "rackbox"}; !reflect.DeepEqual(a.Hosts, want) {
		t.Errorf("group A hosts %v, want %v", a.Hosts, want)
	}
	if want := []string{"frank-draft.service"}; !reflect.DeepEqual(a.Units, want) {
		t.Errorf("group A units %v, want %v", a.Units, want)
	}
	if want := []string{"frank-other.service"}; !reflect.DeepEqual(b.Units, want) || !b.FirstSeen.Equal(b.LastSeen) {
		t.Errorf("group B: %+v", b)
	}
	if gs, err := db.UnknownGroups(ctx, Filter{Limit: 1}); err != nil || len(gs) != 1 || gs[0].Fingerprint != fpA {
		t.Errorf("limit 1: %+v, %v", gs, err)
	}
	// A host filter counts only that host's attempts of a group.
	gs, err = db.UnknownGroups(ctx, Filter{Host: "rackbox"})
	if err != nil || len(gs) != 1 || gs[0].Fingerprint != fpA || gs[0].Count != 1 ||
		!reflect.DeepEqual(gs[0].Hosts, []string{"rackbox"}) || !gs[0].FirstSeen.Equal(first.Add(24*time.Hour)) {
		t.Errorf("host rackbox: %+v, %v", gs, err)
	}
	// Since the second day: group A's first attempt drops out, B stays.
	gs, err = db.UnknownGroups(ctx, Filter{Since: first.Add(time.Hour)})
	if err != nil || len(gs) != 2 || gs[0].Count != 1 || gs[1].Count != 1 {
		t.Errorf("since %v: %+v, %v", first.Add(time.Hour), gs, err)
	}
	if gs, err := db.UnknownGroups(ctx, Filter{Unit: "frank-other.service", Verdict: "ready"}); err != nil || len(gs) != 1 || gs[0].Fingerprint != fpB {
		t.Errorf("unit frank-other.service (verdict ignored): %+v, %v", gs, err)
	}
	if gs, err := db.UnknownGroups(ctx, Filter{Engine: "no-such-engine"}); err != nil || len(gs) != 0 {
		t.Errorf("unknown engine: %+v, %v", gs, err)
	}
}
