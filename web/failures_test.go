package web

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/store/storetest"
)

// TestHeldFailureGroupsMatchStore: the failure groups the server counts
// from the attempts it holds for the ladders are the store's, for every
// exact-value filter, and stay so while attempts are saved, changed and
// come back after a gap between requests.
func TestHeldFailureGroupsMatchStore(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "web.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	many := storetest.Many(400)
	if err := db.SaveAttempts(ctx, many[:300], nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(db, Options{Location: time.UTC}))
	t.Cleanup(srv.Close)

	oomGroup := domain.GroupID(domain.VerdictOOMGraphCapture, "test.oom_graph_capture", "")
	cases := []struct {
		query string
		f     domain.AttemptFilter
	}{
		{"", domain.AttemptFilter{}},
		{"verdict=unknown_failure", domain.AttemptFilter{Verdicts: []string{"unknown_failure"}}},
		{"host=rackbox&host=dankclaw", domain.AttemptFilter{Hosts: []string{"rackbox", "dankclaw"}}},
		{"unit=engine-1.service&engine=vllm", domain.AttemptFilter{Units: []string{"engine-1.service"}, Engines: []string{"vllm"}}},
		{"group=" + oomGroup, domain.AttemptFilter{Group: oomGroup}},
		{"limit=1", domain.AttemptFilter{Limit: 1}},
		{"host=nowhere", domain.AttemptFilter{Hosts: []string{"nowhere"}}},
	}
	check := func(step string) {
		t.Helper()
		for _, c := range cases {
			code, body, _ := get(t, srv, "/api/v1/failures?"+c.query)
			if code != 200 {
				t.Fatalf("%s %q: %d %s", step, c.query, code, body)
			}
			var got failuresJSON
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			gs, err := db.FailureGroups(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			want := failuresJSON{Groups: []failureGroupJSON{}, RegressionGapDays: 7}
			for _, g := range gs {
				want.Groups = append(want.Groups, groupJSON(g))
				want.TotalAttempts += g.Count
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %q:\n got  %+v\n want %+v", step, c.query, got, want)
			}
		}
	}
	check("first")

	// More attempts, one verdict changed, and an OOM that comes back after
	// 30 days: the held attempts follow the saves.
	changed := *many[1]
	changed.Verdict, changed.Rule = domain.VerdictUnknownFailure, "test.unknown_failure"
	back := *many[1]
	back.ID, back.InvocationID = back.ID+"-back", back.InvocationID+"b"
	back.StartedAt, back.EndedAt = back.StartedAt.Add(30*24*time.Hour), back.EndedAt.Add(30*24*time.Hour)
	saves := append(append([]*domain.Attempt{}, many[300:]...), &changed, &back)
	time.Sleep(2 * time.Millisecond) // a later updated_at than the first saves
	if err := db.SaveAttempts(ctx, saves, nil); err != nil {
		t.Fatal(err)
	}
	check("after saves")
	code, body, _ := get(t, srv, "/api/v1/failures?group="+oomGroup)
	var got failuresJSON
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got.Groups) != 1 {
		t.Fatalf("%d %v %s", code, err, body)
	}
	// 400 attempts, 80 OOMs at graph capture (i%5 == 1), one of them now
	// unknown_failure, one more after the gap.
	if g := got.Groups[0]; g.Count != 80 || g.Regressions != 1 || g.Newest != back.ID || g.CameBackAfter < 29 {
		t.Errorf("OOM group after saves: %+v", g)
	}
}
