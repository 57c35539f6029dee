package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/loki/pkg/push"
	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/loki"
	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
)

func TestPushTokenRequiredOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		listen    string
		ok        bool
		basicAuth bool // --web.config.file sets basic_auth_users
	}{
		{nil, "127.0.0.1:8080", true, false},
		{nil, "localhost:8080", true, false},
		{nil, "[::1]:8080", true, false},
		{nil, "0.0.0.0:8080", false, false},
		{nil, ":8080", false, false},
		{nil, "192.0.2.7:8080", false, false},
		{[]string{"--push-token", "t"}, "0.0.0.0:8080", true, false},
		{[]string{"--push=false"}, "0.0.0.0:8080", true, false},
		{nil, "0.0.0.0:8080", true, true},
		{[]string{"--push-token", "t"}, "0.0.0.0:8080", false, true},
		{[]string{"--push-token", "t"}, "127.0.0.1:8080", false, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			t.Setenv("ANALYZER_PUSH_TOKEN", "")
			lf := addLiveFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := lf.check(tc.listen, tc.basicAuth)
			if (err == nil) != tc.ok {
				t.Errorf("%v --listen %s: err %v, want ok=%v", tc.args, tc.listen, err, tc.ok)
			}
		})
	}
	// serve itself refuses to start, before opening anything.
	err := run(context.Background(), []string{"serve", "--db", filepath.Join(t.TempDir(), "x.db"), "--listen", "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "--push-token") {
		t.Errorf("serve on 0.0.0.0 without a token: %v", err)
	}
}

// TestServeStackWiring builds serve's live pipeline over a real database
// and HTTP server: a push is judged and saved, and /metrics reports it.
func TestServeStackWiring(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "serve.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lv, srv := liveServer(t, db, "--push-token", "tok")

	body, err := loki.EncodeProtobuf(&push.PushRequest{Streams: []push.Stream{{
		Labels: `{host="gpu-01", unit="vllm.service"}`,
		Entries: []push.Entry{{Timestamp: time.Unix(1790916000, 0), Line: "INFO vLLM API server version 0.19.2",
			StructuredMetadata: push.LabelsAdapter{{Name: "invocation_id", Value: "0123456789abcdef0123456789abcdef"}, {Name: "_TRANSPORT", Value: "stdout"}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	postPush(t, srv.URL, "tok", body)
	if err := lv.close(); err != nil { // the final flush saves the attempt
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`analyzer_attempts{verdict="running"} 1`,
		`analyzer_ingest_entries_total{source="loki_push"} 1`,
		`analyzer_unit_state{host="gpu-01",state="booting",unit="vllm.service"} 1`,
		`analyzer_push_requests_total{code="204"} 1`,
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestReplayPushesFindings: replay --loki-url sends every finding of the
// replayed attempts to Loki once and says so; with Loki's default age limit
// the fixtures' findings (weeks old) are not sent but counted too old.
func TestReplayPushesFindings(t *testing.T) {
	var mu sync.Mutex
	entries := 0
	lokiSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _, rerr := loki.DecodeRequest(r, 10<<20)
		if rerr != nil {
			t.Errorf("bad push: %v", rerr)
			w.WriteHeader(400)
			return
		}
		mu.Lock()
		for _, s := range req.Streams {
			entries += len(s.Entries)
		}
		mu.Unlock()
		w.WriteHeader(204)
	}))
	defer lokiSrv.Close()
	dbPath := filepath.Join(t.TempDir(), "r.db")
	old := runCmd(t, "replay", "--db", filepath.Join(t.TempDir(), "old.db"), "--loki-url", lokiSrv.URL, fixtures[0])
	if !strings.Contains(old, "pushed 0 of 0") || !strings.Contains(old, "18 older than --loki-max-age 167h0m0s not sent") || entries != 0 {
		t.Errorf("findings older than Loki accepts were sent (%d): %s", entries, old)
	}
	out := runCmd(t, "replay", "--db", dbPath, "--loki-url", lokiSrv.URL, "--loki-tenant", "fleet", "--loki-max-age", "-1s", fixtures[0])
	as := listStored(t, dbPath)
	want := 0
	for _, a := range as {
		want += len(a.Findings)
	}
	mu.Lock()
	defer mu.Unlock()
	if entries != want || want == 0 {
		t.Errorf("Loki got %d findings, the database has %d", entries, want)
	}
	if !strings.Contains(out, "pushed") || !strings.Contains(out, "(0 failed)") {
		t.Errorf("replay output: %s", out)
	}
}

// TestReplayLokiFlagsWithoutURL: a Loki credential without --loki-url is
// a usage error before anything is replayed (replay makes no pusher, and
// no metrics for one, without a URL).
func TestReplayLokiFlagsWithoutURL(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "r.db")
	err := run(context.Background(), []string{"replay", "--db", dbPath, "--loki-tenant", "fleet", fixtures[0]})
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "need --loki-url") {
		t.Fatalf("replay --loki-tenant without --loki-url: %v, want the usage error", err)
	}
	if _, serr := os.Stat(dbPath); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the database was created (%v): the flags must fail first", serr)
	}
}

// liveServer starts serve's live pipeline over db with serve's flags args
// and an HTTP server with its routes (the push endpoint), closed when the
// test ends.
func liveServer(t *testing.T, db *store.DB, args ...string) (*live, *httptest.Server) {
	t.Helper()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	lf := addLiveFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	lv, err := startLive(context.Background(), db, lf)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(db, web.Options{Routes: lv.routes}))
	t.Cleanup(srv.Close)
	return lv, srv
}

// TestExternalURL: --external-url takes an absolute http(s) URL and drops
// its trailing slash; anything else is a usage error at start.
func TestExternalURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                               "",
		"https://analyzer.example":       "https://analyzer.example",
		"https://analyzer.example/":      "https://analyzer.example",
		"http://10.0.0.1:8080/analyzer/": "http://10.0.0.1:8080/analyzer",
		"analyzer.example":               "!",
		"ftp://analyzer.example":         "!",
		"https://analyzer.example/?x=1":  "!",
		"https:///no-host":               "!",
	} {
		got, err := externalURL(in)
		if (want == "!") != (err != nil) || want != "!" && got != want {
			t.Errorf("externalURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
