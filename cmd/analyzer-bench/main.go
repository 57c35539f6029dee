// Command analyzer-bench measures how long a root-cause note takes to reach
// the journal: it starts `analyzer serve` on a journal directory, appends a
// boot attempt that dies of a CUDA OOM at graph capture (engine lines, the
// fatal line and systemd's exit records, appended together with
// systemd-journal-remote), and waits for the analyzer's note about that
// invocation in the local journal. It prints p50/p99 over the runs. It needs
// root, a running systemd-journald and systemd-journal-remote; make bench
// runs it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/llmfleet/analyzer/ingest"
	"github.com/llmfleet/analyzer/ingest/journald"
)

func main() {
	bin := flag.String("analyzer", "bin/analyzer", "analyzer binary")
	runs := flag.Int("runs", 100, "attempts to append")
	pagesDB := flag.String("pages", "", "instead: time the web pages of serve on this database while -writer is replayed into it")
	writer := flag.String("writer", "", "with -pages: the input replayed meanwhile")
	timeOut := flag.String("time", "", "instead: run the command after the flags and write its wall and CPU seconds to this file")
	flag.Parse()
	if *timeOut != "" {
		code, err := timeCommand(*timeOut, flag.Args())
		if err != nil {
			fmt.Fprintln(os.Stderr, "analyzer-bench:", err)
		}
		os.Exit(code)
	}
	var err error
	if *pagesDB != "" {
		err = pages(*bin, *pagesDB, *writer, *runs)
	} else {
		err = run(*bin, *runs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "analyzer-bench:", err)
		os.Exit(1)
	}
}

func run(bin string, runs int) error {
	if c, err := net.Dial("unixgram", "/run/systemd/journal/socket"); err == nil {
		c.Close()
	} else {
		if err := os.MkdirAll("/run/systemd/journal", 0o755); err != nil {
			return err
		}
		if err := exec.Command("/lib/systemd/systemd-journald").Start(); err != nil {
			return fmt.Errorf("start journald: %w", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	work, err := os.MkdirTemp("", "analyzer-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, "journal")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, "bench.journal")
	host := "bench-" + randHex(4)
	// The reader is at the journal's tail before serve starts, so that it
	// sees every note serve writes.
	notes, err := journald.Open("")
	if err != nil {
		return err
	}
	defer notes.Close()
	if err := notes.Match("SYSLOG_IDENTIFIER=analyzer"); err != nil {
		return err
	}
	if err := notes.SeekTail(); err != nil {
		return err
	}
	// A first attempt creates the file, so that serve has a journal to open.
	first := randHex(16)
	if err := appendAttempt(file, host, first, time.Now()); err != nil {
		return err
	}
	serve := exec.Command(bin, "serve", "--db", filepath.Join(work, "a.db"), "--journal-dir", dir,
		"--listen", "127.0.0.1:0", "--since", time.Now().Add(-time.Minute).Format(time.RFC3339))
	// What serve prints, and whether it still runs, is said when a note
	// does not come: a missing note is serve's failure or the journal's.
	serveLog := &lockedBuffer{}
	serve.Stdout, serve.Stderr = serveLog, serveLog
	if err := serve.Start(); err != nil {
		return err
	}
	var waitErr error // serve's exit, once exited is closed
	exited := make(chan struct{})
	go func() { waitErr = serve.Wait(); close(exited) }()
	defer func() { _ = serve.Process.Kill(); <-exited }()
	why := func(err error) error {
		state := "serve still runs"
		select {
		case <-exited:
			state = fmt.Sprintf("serve exited (%v)", waitErr)
		default:
		}
		return fmt.Errorf("%w; %s; it printed:\n%s", err, state, serveLog.tail(4096))
	}
	// The first attempt's note says serve is up and following: a fixed
	// second of sleep was too short once on a busy machine (the first
	// run's note never came).
	if err := waitNote(notes, first, time.Minute); err != nil {
		return why(fmt.Errorf("serve did not start following: %w", err))
	}
	var lat []time.Duration
	for i := 0; i < runs; i++ {
		inv := randHex(16)
		start := time.Now()
		if err := appendAttempt(file, host, inv, start); err != nil {
			return err
		}
		if err := waitNote(notes, inv, 30*time.Second); err != nil {
			return why(fmt.Errorf("run %d: %w", i, err))
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Printf("note latency (fatal line appended → note readable in the journal), %d runs: p50 %v  p99 %v  max %v\n",
		len(lat), pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	return nil
}

// lockedBuffer is a bytes.Buffer a child's output goroutine writes while
// another goroutine may read its tail.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// tail returns the last n bytes written, at most.
func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.b.Bytes()
	return string(b[max(len(b)-n, 0):])
}

// waitNote reads notes until one names invocation inv.
func waitNote(r *journald.Reader, inv string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		rec, _, ok, err := r.Next()
		if err != nil {
			return err
		}
		if !ok {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			r.Wait(ctx)
			cancel()
			continue
		}
		if string(rec["ANALYZER_INVOCATION_ID"]) == inv {
			return nil
		}
	}
	return fmt.Errorf("no note for invocation %s within %v", inv, limit)
}

// appendAttempt appends one failing boot of bench.service to file: systemd's
// start records, vLLM lines up to CUDA graph capture, the OOM, and the exit.
func appendAttempt(file, host, inv string, at time.Time) error {
	const unit = "bench.service"
	us := at.UnixMicro()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	i := 0
	rec := func(fields map[string]string) {
		r := ingest.Record{"__REALTIME_TIMESTAMP": []byte(strconv.FormatInt(us+int64(i), 10)),
			"__MONOTONIC_TIMESTAMP": []byte(strconv.FormatInt(int64(i)+1, 10)), "_BOOT_ID": []byte("0123456789abcdef0123456789abcdef"),
			"_HOSTNAME": []byte(host), "PRIORITY": []byte("6")}
		for k, v := range fields {
			r[k] = []byte(v)
		}
		_ = ingest.WriteExport(w, r)
		i++
	}
	pid1 := func(msgID, msg string, extra ...string) {
		f := map[string]string{"_PID": "1", "SYSLOG_IDENTIFIER": "systemd", "UNIT": unit, "INVOCATION_ID": inv,
			"MESSAGE_ID": msgID, "MESSAGE": msg, "_SYSTEMD_UNIT": "init.scope"}
		for j := 0; j+1 < len(extra); j += 2 {
			f[extra[j]] = extra[j+1]
		}
		rec(f)
	}
	engine := func(msg string) {
		rec(map[string]string{"_PID": "4242", "SYSLOG_IDENTIFIER": "vllm", "_SYSTEMD_UNIT": unit,
			"_SYSTEMD_INVOCATION_ID": inv, "_TRANSPORT": "stdout", "MESSAGE": msg})
	}
	pid1("7d4958e842da4a758f6c1cdc7b36dcc5", "Starting "+unit+"...", "JOB_TYPE", "start")
	engine("(APIServer pid=1) INFO 11-29 09:00:00 [api_server.py:1885] vLLM API server version 0.19.2")
	engine("(EngineCore pid=2) INFO 11-29 09:00:01 [core.py:96] Initializing a V1 LLM engine (v0.19.2) with config: model='/m', max_seq_len=32768")
	engine("(EngineCore pid=2) INFO 11-29 09:00:02 [kv_cache_utils.py:1087] GPU KV cache size: 100,000 tokens")
	engine("(Worker_TP0 pid=3) Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  50%|█████     | 34/67")
	engine("(Worker_TP0 pid=3) ERROR 11-29 09:00:03 [multiproc_executor.py:703] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 76.00 MiB.")
	engine("(EngineCore pid=2) ERROR 11-29 09:00:03 [core.py:708] EngineCore failed to start.")
	pid1("98e322203f7a4ed290d09fe03c09fe15", unit+": Main process exited, code=exited, status=1/FAILURE", "EXIT_CODE", "exited", "EXIT_STATUS", "1")
	pid1("d9b373ed55a64feb8242e02dbe79a49c", unit+": Failed with result 'exit-code'.", "UNIT_RESULT", "exit-code")
	if err := w.Flush(); err != nil {
		return err
	}
	cmd := exec.Command("/lib/systemd/systemd-journal-remote", "-o", file, "-")
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("systemd-journal-remote: %v: %s", err, out)
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
