package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
)

var fixtures = []string{
	"../../examples/dankserver-night-ladder.journal.json",
	"../../examples/dankclaw-day.journal.json",
}

// runCmd runs the analyzer command line and returns what it printed.
func runCmd(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	old := stdout
	stdout = &out
	defer func() { stdout = old }()
	if err := run(context.Background(), args); err != nil {
		t.Fatalf("analyzer %s: %v", strings.Join(args, " "), err)
	}
	return out.String()
}

// listStored returns every attempt of the database at dbPath.
func listStored(t *testing.T, dbPath string) []*domain.Attempt {
	t.Helper()
	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	as, err := db.ListAttempts(context.Background(), domain.AttemptFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return as
}

func TestExplainJSONContract(t *testing.T) {
	out := runCmd(t, append([]string{"explain", "--format", "json"}, fixtures...)...)
	var doc struct {
		Attempts []map[string]any `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("explain output is not JSON: %v\n%s", err, out[:200])
	}
	if len(doc.Attempts) != 20 {
		t.Fatalf("want 20 attempts (16 + 4), got %d", len(doc.Attempts))
	}
	// Attempts come in start order across both hosts; take the night's first rung.
	var first map[string]any
	for _, a := range doc.Attempts {
		if a["invocation_id"] == "5ec84d8dbc74254770f58904dba41ecc" {
			first = a
		}
	}
	if first == nil {
		t.Fatal("the first rung of the night ladder is missing")
	}
	for k, want := range map[string]any{"unit": "frank-primary-probe.service", "verdict": "oom_graph_capture",
		"phase": "graph_capture", "engine": "vllm", "host": "dankserver", "exit_status": 1.0, "ended_by": "exit",
		"container": "frank-primary-probe"} {
		if first[k] != want {
			t.Errorf("attempt 0 %s = %v, want %v", k, first[k], want)
		}
	}
	shape := first["shape"].(map[string]any)
	if shape["max_model_len"] != 262144.0 || shape["kv_cache_memory_bytes"] != 11047010304.0 {
		t.Errorf("shape = %v", shape)
	}
	ev := first["evidence"].([]any)[0].(map[string]any)
	if !strings.Contains(ev["message"].(string), "Tried to allocate 76.00 MiB") || ev["cursor"] == "" {
		t.Errorf("evidence = %v", ev)
	}
	started, err := time.Parse(time.RFC3339Nano, first["started_at"].(string))
	if err != nil || started.Unix() != 1790916000 {
		t.Errorf("started_at %v: %v (want the unit's Starting record, 1790916000 s)", first["started_at"], err)
	}
}

func TestExplainTextNamesTheRootCause(t *testing.T) {
	out := runCmd(t, "explain", fixtures[1])
	for _, want := range []string{"frank-small.service", "oom_graph_capture", "Tried to allocate 288.00 MiB", "halogen", "oom_kv_alloc", "dmalloc: FAILED"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}

// TestReplayTwiceThenServe replays both fixture hosts into a real SQLite
// file twice (nothing may change), then serves the UI over it.
func TestReplayTwiceThenServe(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "a.db")
	counts := func() [4]int {
		db, err := sql.Open("sqlite3", dbPath)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var c [4]int
		for i, table := range []string{"attempts", "findings", "attempt_lines", "ingest_positions"} {
			if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&c[i]); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	runCmd(t, append([]string{"replay", "--db", dbPath}, fixtures...)...)
	first := counts()
	runCmd(t, append([]string{"replay", "--db", dbPath}, fixtures...)...)
	second := counts()
	if first != second {
		t.Fatalf("second replay changed the database: %v → %v", first, second)
	}
	// attempt_lines: a row per attempt with evidence, context or a timeline.
	if first[0] != 20 || first[1] < 20 || first[2] != 20 {
		t.Fatalf("counts after replay (attempts, findings, attempt_lines, positions) = %v", first)
	}

	db, err := store.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(web.New(db, web.Options{}))
	defer srv.Close()
	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return string(b)
	}
	page := get("/?verdict=dynamo_constraint_violation")
	if !strings.Contains(page, "2 attempts, newest first") || strings.Contains(page, ">oom_graph_capture</span>") {
		t.Errorf("the list filtered on dynamo_constraint_violation does not show its 2 attempts alone")
	}
	var list struct {
		Attempts []struct {
			ID      string `json:"id"`
			Verdict string `json:"verdict"`
		} `json:"attempts"`
	}
	if err := json.Unmarshal([]byte(get("/api/v1/attempts?verdict=oom_runtime")), &list); err != nil || len(list.Attempts) != 1 {
		t.Fatalf("API oom_runtime attempts: %v %v", list, err)
	}
	detail := get("/attempts/" + list.Attempts[0].ID)
	for _, want := range []string{"oom_runtime", "boot_not_survivable", "Tried to allocate 50.00 MiB", "frank-primary-qwen"} {
		if !strings.Contains(detail, want) {
			t.Errorf("attempt page lacks %q", want)
		}
	}
}
