package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/store/storetest"
)

// countingDB counts the attempts pages and failure groups read from the
// store.
type countingDB struct {
	*store.DB
	pages, groups atomic.Int32
}

func (d *countingDB) PageAttempts(ctx context.Context, f domain.AttemptFilter) (domain.AttemptPage, error) {
	d.pages.Add(1)
	return d.DB.PageAttempts(ctx, f)
}

func (d *countingDB) FailureGroups(ctx context.Context, f domain.AttemptFilter) ([]domain.FailureGroup, error) {
	d.groups.Add(1)
	return d.DB.FailureGroups(ctx, f)
}

// readerOnly hides the store's Versioner: a server over it reads every
// page from the store.
type readerOnly struct{ AttemptReader }

// TestHeldPagesFollowSaves saves attempts a batch at a time, some saved
// again with another verdict, into a database one server keeps serving:
// after every save its attempts list (answered from the attempts it holds)
// and failure groups (counted once per database version) must be those a
// server reading the store on every request gives.
func TestHeldPagesFollowSaves(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(filepath.Join(t.TempDir(), "held.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	counting := &countingDB{DB: db}
	live := httptest.NewServer(New(counting, Options{Location: time.UTC, PageLimit: 7}))
	t.Cleanup(live.Close)
	plain := httptest.NewServer(New(readerOnly{db}, Options{Location: time.UTC, PageLimit: 7}))
	t.Cleanup(plain.Close)

	many := storetest.Many(60)
	oomGroup := domain.GroupID(domain.VerdictOOMGraphCapture, "test.oom_graph_capture", "")
	paths := []string{"/", "/?limit=3", "/?limit=500", "/?tz=UTC", "/?tz=Asia/Kolkata&limit=4", "/?host=dankclaw", "/failures", "/failures?limit=1", "/failures?group=" + oomGroup,
		"/failures?group=000000000000", "/api/v1/failures", "/api/v1/failures?group=" + oomGroup, "/attempts/" + many[1].ID}
	step := 0
	for i := 0; i < len(many); i += 9 {
		batch := many[i:min(i+9, len(many))]
		if step%2 == 1 {
			// An attempt saved before is saved again, judged otherwise: it
			// leaves its failure group and keeps its place in the list.
			again := *many[1]
			again.Verdict, again.Rule = domain.VerdictUnknownFailure, "test.unknown_failure"
			if step%4 == 3 {
				again.Verdict, again.Rule = domain.VerdictOOMGraphCapture, "test.oom_graph_capture"
			}
			batch = append(batch, &again)
		}
		time.Sleep(2 * time.Millisecond) // a later updated_at than the save before
		if err := db.SaveAttempts(ctx, batch, nil); err != nil {
			t.Fatal(err)
		}
		step++
		for _, path := range paths {
			code, got, _ := get(t, live, path)
			wantCode, want, _ := get(t, plain, path)
			if code != wantCode || got != want {
				t.Fatalf("after save %d: %s of the live server (%d) differs from the store's (%d):\n%s\nwant\n%s", step, path, code, wantCode, got, want)
			}
		}
	}
	if step < 6 {
		t.Fatalf("only %d saves", step)
	}
	// The pages above came from what the server holds, not the store,
	// except the filtered list (once a save).
	if n := counting.pages.Load(); n != int32(step) {
		t.Errorf("%d attempts pages read from the store, want %d", n, step)
	}
	if n := counting.groups.Load(); n != 0 {
		t.Errorf("%d failure groups read from the store, want 0", n)
	}
	// The list counts every save, not the first one's nine attempts.
	p, err := db.PageAttempts(ctx, domain.AttemptFilter{Limit: 1})
	if err != nil || p.Total < 50 {
		t.Fatalf("store: %d attempts, %v", p.Total, err)
	}
	_, body, _ := get(t, live, "/?limit=1")
	if want := fmt.Sprintf("1–1 of %d attempts", p.Total); !strings.Contains(body, want) {
		t.Errorf("list after the last save does not say %q:\n%s", want, body)
	}
}

// failingReads fails the reads of attempts by id (an update's reads of
// what changed) while fail is set, after the first pass of them.
type failingReads struct {
	*store.DB
	fail atomic.Bool
	pass atomic.Int32
}

func (d *failingReads) ListAttempts(ctx context.Context, f domain.AttemptFilter) ([]*domain.Attempt, error) {
	if len(f.IDs) > 0 && d.fail.Load() && d.pass.Add(-1) < 0 {
		return nil, errors.New("database is locked")
	}
	return d.DB.ListAttempts(ctx, f)
}

// TestHeldUpdateRetriesAFailedRead: when reading the attempts a save
// changed fails, the next update reads them again; the held attempts,
// ladders and failure groups then match the store's.
func TestHeldUpdateRetriesAFailedRead(t *testing.T) {
	for _, tc := range []struct {
		name         string
		saved, again int   // attempts saved, then saved again judged otherwise
		pass         int32 // reads by id that succeed before one fails
	}{
		{"first read fails", 9, 1, 0},
		// An update reads 500 ids at a time: the second read fails after
		// the first one's attempts were read.
		{"second read fails", 520, 520, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db, err := store.Open(filepath.Join(t.TempDir(), "held.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			reads := &failingReads{DB: db}
			live := httptest.NewServer(New(reads, Options{Location: time.UTC}))
			t.Cleanup(live.Close)
			plain := httptest.NewServer(New(readerOnly{db}, Options{Location: time.UTC}))
			t.Cleanup(plain.Close)

			many := storetest.Many(tc.saved)
			if err := db.SaveAttempts(ctx, many, nil); err != nil {
				t.Fatal(err)
			}
			paths := []string{"/", "/failures", "/api/v1/ladders"}
			for _, path := range paths {
				if code, _, _ := get(t, live, path); code != http.StatusOK {
					t.Fatalf("%s: %d", path, code)
				}
			}
			time.Sleep(2 * time.Millisecond) // a later updated_at than the save before
			var again []*domain.Attempt
			for _, a := range many[:tc.again] {
				b := *a
				b.Verdict, b.Rule = domain.VerdictUnknownFailure, "test.unknown_failure"
				again = append(again, &b)
			}
			if err := db.SaveAttempts(ctx, again, nil); err != nil {
				t.Fatal(err)
			}
			reads.pass.Store(tc.pass)
			reads.fail.Store(true)
			if code, _, _ := get(t, live, "/api/v1/ladders"); code == http.StatusOK {
				t.Fatal("ladders answered while a read of the changed attempts failed")
			}
			reads.fail.Store(false)
			for _, path := range paths {
				code, got, _ := get(t, live, path)
				wantCode, want, _ := get(t, plain, path)
				if code != wantCode || got != want {
					t.Fatalf("after a failed update, %s of the live server (%d) differs from the store's (%d):\n%.2000s\nwant\n%.2000s", path, code, wantCode, got, want)
				}
			}
		})
	}
}

// TestUnfiltered: only a query without filters or cursor is answered from
// the held attempts.
func TestUnfiltered(t *testing.T) {
	if !unfiltered(domain.AttemptFilter{Limit: 200, Brief: true, WallClock: true}) {
		t.Error("limit, brief and wall clock alone: not unfiltered")
	}
	c := domain.CursorOf(storetest.Many(1)[0])
	for _, f := range []domain.AttemptFilter{
		{Host: "h"}, {Hosts: []string{"h"}}, {Units: []string{"u"}}, {Engines: []string{"vllm"}}, {Verdicts: []string{"ready"}},
		{Findings: []string{"oom"}}, {Failed: true}, {Group: "g"}, {Search: "abc"}, {Cursor: c},
		{Since: time.Unix(1, 0)}, {Until: time.Unix(1, 0)}, {IDs: []string{"a"}}, {Unit: "u"}, {Engine: "e"}, {Verdict: "ready"},
	} {
		if unfiltered(f) {
			t.Errorf("%+v: unfiltered", f)
		}
	}
}

// TestMergeAttempts: merging changed attempts into the sorted list gives
// the list sorted anew, with starts to the microsecond, ties by id and
// unknown starts last.
func TestMergeAttempts(t *testing.T) {
	at := func(id string, us int64) *domain.Attempt {
		a := &domain.Attempt{ID: id}
		if us != 0 {
			a.StartedAt = time.UnixMicro(us).UTC()
		}
		return a
	}
	a, b, c, d, e := at("a", 30), at("b", 20), at("c", 20), at("d", 0), at("e", 0)
	sorted := []*domain.Attempt{a, c, b, e, d}
	b2 := at("b", 40)                  // b starts later now
	f := at("f", 20)                   // a tie with c, before it by id
	g := at("g", 0)                    // unknown start, first of those by id
	h := at("h", 30)                   // same microsecond as a ...
	h.StartedAt = h.StartedAt.Add(999) // ... though 999 ns later
	got := mergeAttempts(sorted, map[*domain.Attempt]bool{b: true}, []*domain.Attempt{g, f, b2, h})
	var ids []string
	for _, x := range got {
		ids = append(ids, x.ID)
	}
	if want := "b h a f c g e d"; strings.Join(ids, " ") != want {
		t.Errorf("merged %q, want %q", strings.Join(ids, " "), want)
	}
}

// gatedDB holds Version calls while its gate is closed: an update of the
// held state then cannot finish.
type gatedDB struct {
	*store.DB
	mu   sync.Mutex
	gate chan struct{} // nil: open
}

func (d *gatedDB) Version(ctx context.Context) (string, error) {
	d.mu.Lock()
	g := d.gate
	d.mu.Unlock()
	if g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return d.DB.Version(ctx)
}

func (d *gatedDB) close() {
	d.mu.Lock()
	d.gate = make(chan struct{})
	d.mu.Unlock()
}

func (d *gatedDB) open() {
	d.mu.Lock()
	if d.gate != nil {
		close(d.gate)
		d.gate = nil
	}
	d.mu.Unlock()
}

// TestLiveUpdate: with LiveUpdate, pages are answered from the last
// complete update while the next one cannot finish, and follow a save
// without a request asking for it.
func TestLiveUpdate(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "live.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before the database closes
	gated := &gatedDB{DB: db}
	live := httptest.NewServer(New(gated, Options{Location: time.UTC, LiveUpdate: true, LiveInterval: 5 * time.Millisecond, Context: ctx}))
	t.Cleanup(live.Close)
	plain := httptest.NewServer(New(readerOnly{db}, Options{Location: time.UTC}))
	t.Cleanup(plain.Close)
	paths := []string{"/", "/failures", "/ladders"}
	same := func() bool {
		for _, p := range paths {
			_, got, _ := get(t, live, p)
			_, want, _ := get(t, plain, p)
			if got != want {
				return false
			}
		}
		return true
	}
	follows := func(step string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !same(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the live server's pages never became the store's", step)
			}
		}
	}
	many := storetest.Many(30)
	if err := db.SaveAttempts(ctx, many[:10], nil); err != nil {
		t.Fatal(err)
	}
	follows("first save")
	before := map[string]string{}
	for _, p := range paths {
		_, before[p], _ = get(t, plain, p)
	}

	gated.close()
	t.Cleanup(gated.open) // a failed test leaves no update held
	time.Sleep(2 * time.Millisecond)
	if err := db.SaveAttempts(ctx, many[10:], nil); err != nil {
		t.Fatal(err)
	}
	client := http.Client{Timeout: 5 * time.Second}
	for _, p := range paths {
		resp, err := client.Get(live.URL + p)
		if err != nil {
			t.Fatalf("%s while an update is held: %v", p, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != before[p] {
			t.Fatalf("%s while an update is held: %d, not the page before the save", p, resp.StatusCode)
		}
	}
	if _, now, _ := get(t, plain, "/"); now == before["/"] {
		t.Fatal("the second save changed nothing: the test shows nothing")
	}
	gated.open()
	follows("second save")
}
