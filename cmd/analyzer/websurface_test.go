package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmfleet/analyzer/internal/race"
	"github.com/llmfleet/analyzer/loki"
)

// startServe runs serve in this process on a free loopback port and waits
// until it answers; it returns the base URL.
func startServe(t *testing.T, extra ...string) string {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"--db", filepath.Join(t.TempDir(), "s.db"), "--no-journal", "--listen", addr}, extra...)
	stop := serveInProcess(t, args...)
	t.Cleanup(stop)
	base := "http://" + addr
	waitServing(t, base)
	return base
}

// TestServeCutsSlowClients: a client that sends its body slowly is cut off
// within --read-timeout, and an idle keep-alive connection within
// --idle-timeout.
func TestServeCutsSlowClients(t *testing.T) {
	base := startServe(t, "--read-timeout", "1s", "--idle-timeout", "1s")
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", loki.PushPath)
	go func() { // a byte now and then, never the whole body
		for i := 0; i < 20; i++ {
			time.Sleep(300 * time.Millisecond)
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, c) // returns when the server closes the connection
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the slow client was served for %v, want at most the 1 s read timeout (plus a margin)", d)
	}
}

// vmRSS is this process's resident set size in bytes (Linux).
func vmRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// pushRSSBound is the most this process's RSS may grow while 30 clients
// push 3 MB each at once: the receiver decodes two pushes at a time and
// answers the others 429.
const pushRSSBound = 400 << 20

// TestConcurrentLargePushes: 30 clients push 3 MB JSON bodies of 40,000
// small entries each at once. Some get 429 at once; memory stays bounded.
// A refused client may see its connection reset instead: the server answers
// 429 without reading the body and closes, and the kernel resets a socket
// closed with unread data, sometimes before the client has read the 429
// (the client's write then fails: reset by peer or broken pipe).
func TestConcurrentLargePushes(t *testing.T) {
	base := startServe(t)
	var body bytes.Buffer
	body.WriteString(`{"streams":[{"stream":{"host":"gpu-01","unit":"vllm.service","invocation_id":"0123456789abcdef0123456789abcdef"},"values":[`)
	for i := 0; i < 40000; i++ {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `["%d","INFO 10-01 21:40:00 [metrics.py:1] Avg prompt throughput: %d tokens/s"]`, 1790916000000000000+int64(i)*1000, i)
	}
	body.WriteString(`]}]}`)
	if body.Len() < 3<<20 {
		t.Fatalf("body of %d bytes, want 3 MB", body.Len())
	}
	baseline := vmRSS(t)
	var peak int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if r := vmRSS(t); r > peak {
				peak = r
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var mu sync.Mutex
	codes := map[int]int{}
	resets := 0 // refused with a reset (see above)
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, base+loki.PushPath, bytes.NewReader(body.Bytes()))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
				mu.Lock()
				resets++
				mu.Unlock()
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(stopSampling)
	<-sampled
	t.Logf("statuses %v, %d reset while sending; RSS %d MiB before, peak %d MiB", codes, resets, baseline>>20, peak>>20)
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("no push was answered 429: %v", codes)
	}
	if got := codes[http.StatusTooManyRequests] + codes[http.StatusNoContent] + resets; got != 30 {
		t.Errorf("%d of 30 pushes answered 204 or 429 or reset: %v", got, codes)
	}
	if codes[http.StatusNoContent] == 0 {
		t.Errorf("no push went through: %v", codes)
	}
	if grew, bound := peak-baseline, race.Memory(pushRSSBound); grew > bound {
		t.Errorf("RSS grew by %d MiB, more than %d MiB", grew>>20, bound>>20)
	}
}

// TestBrowserOtherOriginCannotWrite serves a hostile page from another
// loopback origin (127.0.0.2) to headless Chromium: its fetch() to the push
// endpoint and its auto-submitted form to /-/reload reach the analyzer but
// change nothing.
func TestBrowserOtherOriginCannotWrite(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("chromium is not installed at %s: %v", chromium, err)
	}
	base := startServe(t)
	before := rulesStatus(t, base)
	push := `{"streams":[{"stream":{"host":"victim","unit":"vllm.service","invocation_id":"0123456789abcdef0123456789abcdef"},"values":[["1790916000000000000","torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.00 GiB"]]}]}`
	page := `<!doctype html><html><body>
<form id="f" method="POST" action="` + base + `/-/reload"><input name="x" value="1"></form>
<script>
var body = ` + strconv.Quote(push) + `;
Promise.all([
  fetch("` + base + loki.PushPath + `", {method: "POST", mode: "no-cors", body: body}).catch(function(){}),
  fetch("` + base + loki.PushPath + `", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: body}).catch(function(){}),
  fetch("` + base + loki.PushPath + `", {method: "POST", headers: {"Content-Type": "application/json"}, body: body}).catch(function(){}),
]).then(function(){ document.title = "sent"; document.getElementById("f").submit(); });
</script></body></html>`
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on a second loopback address: %v", err)
	}
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, page)
	})}
	go func() { _ = evil.Serve(ln) }() // ErrServerClosed at the deferred Close
	defer evil.Close()

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(t.TempDir()))
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	tctx, tcancel := context.WithTimeout(ctx, time.Minute)
	defer tcancel()
	if _, err := chromedp.Run(tctx, chromedp.Navigate("http://"+ln.Addr().String()+"/")); err != nil {
		t.Fatal(err)
	}
	// The page sends its requests, then submits the form (the browser then
	// shows the analyzer's answer to it).
	waitFor(t, "the hostile page to send its requests", func() bool {
		loc, err := chromedp.Run(tctx, chromedp.Evaluate[string](`location.href`))
		return err == nil && strings.HasPrefix(loc, base)
	})
	time.Sleep(500 * time.Millisecond)
	if text, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.body.innerText`)); err != nil ||
		!strings.Contains(text, "cross-origin request refused") {
		t.Errorf("the form's POST to /-/reload was not refused as cross-origin: %q %v", text, err)
	}

	resp, err := http.Get(base + "/api/v1/attempts")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Attempts []json.RawMessage `json:"attempts"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("/api/v1/attempts: %v", err)
	}
	if len(doc.Attempts) != 0 {
		t.Errorf("a page of another origin pushed %d attempts", len(doc.Attempts))
	}
	if st := rulesStatus(t, base); !st.LastReload.Time.Equal(before.LastReload.Time) {
		t.Errorf("a page of another origin triggered a reload: %+v", st.LastReload)
	}
	if strings.Contains(metricsText(t, base), `analyzer_push_requests_total{code="204"} 1`) {
		t.Error("a push of another origin was taken")
	}
}

// metricsText is GET /metrics.
func metricsText(t *testing.T, base string) string {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}

// TestMetricsPassPromtool: /metrics after a replay of both fixtures passes
// the real `promtool check metrics` and carries analyzer_build_info.
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	dbPath := filepath.Join(t.TempDir(), "m.db")
	runCmd(t, "replay", "--db", dbPath, "../../examples/dankserver-night-ladder.journal.json", "../../examples/dankclaw-day.journal.json")
	addr := freeAddr(t)
	stop := serveInProcess(t, "--db", dbPath, "--no-journal", "--listen", addr)
	defer stop()
	base := "http://" + addr
	waitServing(t, base)
	body := metricsText(t, base)
	if !strings.Contains(body, "analyzer_build_info{") {
		t.Error("no analyzer_build_info")
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestServeNotifiesSystemd: under Type=notify (NOTIFY_SOCKET set) serve
// sends READY=1 once it serves, then WATCHDOG=1 about every half of
// WatchdogSec while its checks pass.
func TestServeNotifiesSystemd(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "400000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	startServe(t)
	var got []string
	start := time.Now()
	buf := make([]byte, 256)
	for len(got) < 3 && time.Since(start) < 5*time.Second {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := conn.Read(buf)
		if err != nil {
			break
		}
		got = append(got, string(buf[:n]))
	}
	if len(got) < 3 || got[0] != "READY=1" || got[1] != "WATCHDOG=1" || got[2] != "WATCHDOG=1" {
		t.Fatalf("notifications %q, want READY=1 then WATCHDOG=1 twice", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("three notifications took %v with WatchdogSec 0.4 s", d)
	}
}
