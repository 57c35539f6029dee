package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store/storetest"
)

// manyDB is a SQLite file holding storetest.Many(n).
func manyDB(t *testing.T, n int) (*DB, []*domain.Attempt) {
	t.Helper()
	db, _ := openTemp(t)
	as := storetest.Many(n)
	if err := db.SaveAttempts(context.Background(), as, nil); err != nil {
		t.Fatal(err)
	}
	return db, as
}

// wantOrder is the ids of as in the list order: newest start first,
// unknown starts last, ties by id descending.
func wantOrder(as []*domain.Attempt) []string {
	s := slices.Clone(as)
	slices.SortFunc(s, func(a, b *domain.Attempt) int {
		switch {
		case a.StartedAt.IsZero() != b.StartedAt.IsZero():
			if a.StartedAt.IsZero() {
				return 1
			}
			return -1
		case !a.StartedAt.Equal(b.StartedAt):
			return b.StartedAt.Compare(a.StartedAt)
		}
		return -cmpString(a.ID, b.ID)
	})
	ids := make([]string, len(s))
	for i, a := range s {
		ids[i] = a.ID
	}
	return ids
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestPageAttemptsWalk walks 3,000 attempts forward by 250 and back again:
// every attempt once, in order, with the right totals and positions.
func TestPageAttemptsWalk(t *testing.T) {
	db, as := manyDB(t, 3000)
	ctx := context.Background()
	want := wantOrder(as)
	var got []string
	f := Filter{Limit: 250, Brief: true}
	var last domain.AttemptPage
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("more than 20 pages")
		}
		p, err := db.PageAttempts(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != 3000 || p.Before != len(got) {
			t.Fatalf("page %d: total %d before %d, want 3000 and %d", pages, p.Total, p.Before, len(got))
		}
		if (p.Prev == nil) != (pages == 0) {
			t.Errorf("page %d: prev %v", pages, p.Prev)
		}
		for _, a := range p.Attempts {
			got = append(got, a.ID)
		}
		last = p
		if p.Next == nil {
			break
		}
		// A token round trip, as a client would send it.
		c, err := domain.ParsePageCursor(p.Next.Encode())
		if err != nil {
			t.Fatal(err)
		}
		f.Cursor = c
	}
	if !slices.Equal(got, want) {
		t.Fatalf("walk gives %d ids, want %d in order (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	// The last page holds the attempts with unknown start.
	if n := len(last.Attempts); n != 3000-11*250 || !last.Attempts[n-1].StartedAt.IsZero() {
		t.Errorf("last page: %d attempts", n)
	}
	// Back from the last page to the first.
	var back []string
	p := last
	for p.Prev != nil {
		if p, _ = db.PageAttempts(ctx, Filter{Limit: 250, Brief: true, Cursor: p.Prev}); len(p.Attempts) != 250 {
			t.Fatalf("previous page holds %d attempts", len(p.Attempts))
		}
		back = append(ids(p.Attempts), back...)
	}
	if !slices.Equal(back, want[:len(want)-len(last.Attempts)]) {
		t.Errorf("walking back gives %d ids (first difference at %d)", len(back), firstDiff(back, want))
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPageAttemptsStableUnderInserts: attempts inserted ahead of a cursor
// (newer ones) do not shift the next page; the total counts them.
func TestPageAttemptsStableUnderInserts(t *testing.T) {
	db, as := manyDB(t, 300)
	ctx := context.Background()
	p1, err := db.PageAttempts(ctx, Filter{Limit: 100, Brief: true})
	if err != nil {
		t.Fatal(err)
	}
	newer := storetest.Many(1)[0]
	newer.ID, newer.InvocationID = "dankserver/new.service/1", "ffffffff000000000000000000000001"
	newer.StartedAt = storetest.ManyStart.Add(24 * time.Hour)
	if err := db.SaveAttempts(ctx, []*domain.Attempt{newer}, nil); err != nil {
		t.Fatal(err)
	}
	p2, err := db.PageAttempts(ctx, Filter{Limit: 100, Brief: true, Cursor: p1.Next})
	if err != nil {
		t.Fatal(err)
	}
	if want := wantOrder(as)[100:200]; !slices.Equal(ids(p2.Attempts), want) {
		t.Errorf("page 2 after an insert starts at %s, want %s", p2.Attempts[0].ID, want[0])
	}
	if p2.Total != 301 || p2.Before != 101 {
		t.Errorf("total %d before %d, want 301 and 101", p2.Total, p2.Before)
	}
}

func TestFilterManyValues(t *testing.T) {
	db, as := manyDB(t, 300)
	ctx := context.Background()
	count := func(f Filter) int {
		t.Helper()
		p, err := db.PageAttempts(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Attempts) != p.Total {
			t.Fatalf("%+v: %d attempts, total %d", f, len(p.Attempts), p.Total)
		}
		return p.Total
	}
	want := func(keep func(i int, a *domain.Attempt) bool) int {
		n := 0
		for i, a := range as {
			if keep(i, a) {
				n++
			}
		}
		return n
	}
	cases := []struct {
		name string
		f    Filter
		keep func(i int, a *domain.Attempt) bool
	}{
		{"two verdicts", Filter{Verdicts: []string{"ready", "stopped"}}, func(i int, a *domain.Attempt) bool { return i%5 == 0 || i%5 == 3 }},
		{"two hosts", Filter{Hosts: []string{"dankserver", "rackbox"}}, func(i int, a *domain.Attempt) bool { return i%3 != 2 }},
		{"engines and units", Filter{Engines: []string{"vllm"}, Units: []string{"engine-0.service", "engine-1.service"}},
			func(i int, a *domain.Attempt) bool { return i%3 == 0 && i%5 < 2 }},
		{"crash_loop", Filter{Findings: []string{domain.FindingCrashLoop}}, func(i int, a *domain.Attempt) bool { return i%7 == 0 }},
		{"crash_loop or oom_kv_alloc", Filter{Findings: []string{domain.FindingCrashLoop, "oom_kv_alloc"}},
			func(i int, a *domain.Attempt) bool { return i%7 == 0 || i%5 == 4 }},
		{"failed", Filter{Failed: true}, func(i int, a *domain.Attempt) bool { return i%5 == 1 || i%5 == 2 || i%5 == 4 }},
		{"failed on rackbox", Filter{Failed: true, Host: "rackbox"}, func(i int, a *domain.Attempt) bool { return i%3 == 1 && (i%5 == 1 || i%5 == 2 || i%5 == 4) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, w := count(c.f), want(c.keep); got != w || w == 0 {
				t.Errorf("%s: %d attempts, want %d", c.name, got, w)
			}
		})
	}
}

func TestSearch(t *testing.T) {
	db, as := manyDB(t, 50)
	ctx := context.Background()
	find := func(q string) []string {
		t.Helper()
		got, err := db.ListAttempts(ctx, Filter{Search: q, Brief: true})
		if err != nil {
			t.Fatal(err)
		}
		return ids(got)
	}
	a := as[17]
	for _, q := range []string{a.ID, a.InvocationID, a.InvocationID[:8], a.InvocationID[:12], a.ContainerID, a.ContainerID[:12], a.Container} {
		if got := find(q); !slices.Equal(got, []string{a.ID}) {
			t.Errorf("search %q finds %v, want %s", q, got, a.ID)
		}
	}
	// Shorter than SearchMinLength: whole values only.
	if got := find(a.InvocationID[:7]); len(got) != 0 {
		t.Errorf("a 7-digit prefix finds %v", got)
	}
	if got := find("no-such-thing"); len(got) != 0 {
		t.Errorf("unknown id finds %v", got)
	}
}

func TestFailureGroups(t *testing.T) {
	db, _ := openTemp(t)
	ctx := context.Background()
	day := 24 * time.Hour
	t0 := time.Date(2026, 9, 1, 3, 0, 0, 0, time.FixedZone("", -7*3600))
	mk := func(i int, v domain.Verdict, rule, host string, at time.Time) *domain.Attempt {
		a := &domain.Attempt{ID: fmt.Sprintf("%s/u%d.service/%d", host, i%2, i), Host: host, Unit: fmt.Sprintf("u%d.service", i%2),
			InvocationID: fmt.Sprint(i), Engine: "vllm", StartedAt: at, EndedAt: at.Add(time.Minute), Verdict: v, Rule: rule,
			Phase: domain.PhaseGraphCapture, Shape: domain.Shape{}}
		if v.IsFailure() {
			a.Findings = []domain.Finding{{ID: string(v), Rule: rule, Severity: domain.SeverityCritical, Phase: a.Phase, Time: at}}
		}
		return a
	}
	// OOM at graph capture: days 0, 1, 2, then back on day 12 and day 13.
	var as []*domain.Attempt
	for i, d := range []int{0, 1, 2, 12, 13} {
		host := "dankserver"
		if i == 4 {
			host = "rackbox"
		}
		as = append(as, mk(i, domain.VerdictOOMGraphCapture, "vllm.oom_graph_capture", host, t0.Add(time.Duration(d)*day)))
	}
	// The same verdict from another rule is another group; ready attempts are no group.
	as = append(as, mk(10, domain.VerdictOOMGraphCapture, "sglang.oom_graph_capture", "dankserver", t0.Add(5*day)),
		mk(11, domain.VerdictReady, "", "dankserver", t0.Add(6*day)))
	if err := db.SaveAttempts(ctx, as, nil); err != nil {
		t.Fatal(err)
	}
	gs, err := db.FailureGroups(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(gs), gs)
	}
	g := gs[0]
	if g.Verdict != domain.VerdictOOMGraphCapture || g.Rule != "vllm.oom_graph_capture" || g.Count != 5 ||
		g.ID != domain.GroupID(g.Verdict, g.Rule, "") {
		t.Errorf("group: %+v", g)
	}
	if !g.FirstSeen.Equal(t0) || !g.LastSeen.Equal(t0.Add(13*day)) || g.FirstSeen.Format(time.RFC3339) != "2026-09-01T03:00:00-07:00" {
		t.Errorf("seen %v … %v", g.FirstSeen, g.LastSeen)
	}
	if g.Regressions != 1 || g.CameBackAfter != 10*day || !g.CameBackAt.Equal(t0.Add(12*day)) {
		t.Errorf("regression: %d, came back after %v at %v", g.Regressions, g.CameBackAfter, g.CameBackAt)
	}
	if !slices.Equal(g.Hosts, []string{"dankserver", "rackbox"}) || !slices.Equal(g.Units, []string{"u0.service", "u1.service"}) ||
		g.AttemptIDs[0] != as[4].ID || len(g.AttemptIDs) != domain.GroupExamples {
		t.Errorf("hosts %v units %v examples %v", g.Hosts, g.Units, g.AttemptIDs)
	}
	if gs[1].Count != 1 || gs[1].Rule != "sglang.oom_graph_capture" || gs[1].Regressions != 0 {
		t.Errorf("second group: %+v", gs[1])
	}
	// One group by id, and its attempts.
	one, err := db.FailureGroups(ctx, Filter{Group: g.ID})
	if err != nil || len(one) != 1 || one[0].Count != 5 {
		t.Errorf("group %s: %+v %v", g.ID, one, err)
	}
	members, err := db.ListAttempts(ctx, Filter{Group: g.ID, Brief: true})
	if err != nil || len(members) != 5 {
		t.Errorf("attempts of group %s: %d %v", g.ID, len(members), err)
	}
	if none, err := db.ListAttempts(ctx, Filter{Group: "000000000000"}); err != nil || len(none) != 0 {
		t.Errorf("unknown group: %d %v", len(none), err)
	}
	// Filters narrow the attempts counted: no regression within the first week.
	early, err := db.FailureGroups(ctx, Filter{Until: t0.Add(7 * day), Verdicts: []string{"oom_graph_capture"}})
	if err != nil || len(early) != 2 || early[0].Count != 3 || early[0].Regressions != 0 {
		t.Errorf("first week: %+v %v", early, err)
	}
}
