package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/rules"
)

// nightCopies returns n copies of the night fixture as JSON lines, copy k
// a day later than copy k-1 with its own invocation, container and cursor
// ids (as scripts/bench-journal.py builds the bench input).
func nightCopies(t *testing.T, n int) [][]byte {
	t.Helper()
	data, err := os.ReadFile("../../examples/dankserver-night-ladder.journal.json")
	if err != nil {
		t.Fatal(err)
	}
	remap := func(v string, k int) string {
		h := md5.Sum([]byte(fmt.Sprintf("%s/%d", v, k)))
		return hex.EncodeToString(h[:])
	}
	var out [][]byte
	for k := 0; k < n; k++ {
		var buf bytes.Buffer
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"_SYSTEMD_INVOCATION_ID", "INVOCATION_ID", "CONTAINER_ID_FULL", "PODMAN_ID", "_STREAM_ID"} {
				if v, ok := m[f].(string); ok {
					m[f] = remap(v, k)
				}
			}
			if u, _ := m["_SYSTEMD_UNIT"].(string); strings.HasPrefix(u, "libpod-conmon-") && m["CONTAINER_ID_FULL"] != nil {
				m["_SYSTEMD_UNIT"] = "libpod-conmon-" + m["CONTAINER_ID_FULL"].(string) + ".scope"
			}
			us, _ := strconv.ParseInt(m["__REALTIME_TIMESTAMP"].(string), 10, 64)
			m["__REALTIME_TIMESTAMP"] = strconv.FormatInt(us+int64(k)*86_400_000_000, 10)
			m["__CURSOR"] = fmt.Sprintf("%s;k=%d", m["__CURSOR"], k)
			b, _ := json.Marshal(m)
			buf.Write(append(b, '\n'))
		}
		out = append(out, buf.Bytes())
	}
	return out
}

// TestReplaySavesAttemptsAsTheyEnd replays a journal from a pipe and finds
// attempts in the database while the pipe is still open: a replay saves
// what ended as it goes instead of holding the input's history until the
// end. The end result is what explain finds in the same input.
func TestReplaySavesAttemptsAsTheyEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: builds the binary")
	}
	bin := analyzerBinary(t)
	copies := nightCopies(t, 12)
	input := filepath.Join(t.TempDir(), "all.json")
	if err := os.WriteFile(input, bytes.Join(copies, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(t.TempDir(), "a.db")
	cmd := exec.Command(bin, "replay", "--db", dbPath, "-")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	write := func(parts [][]byte) {
		for _, p := range parts {
			if _, err := stdin.Write(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(copies[:6])
	time.Sleep(2500 * time.Millisecond) // past saveEvery
	write(copies[6:11])
	waitFor(t, "attempts saved while the input is still open", func() bool { n, _ := countAttempts(dbPath); return n > 0 })
	n, _ := countAttempts(dbPath)
	write(copies[11:])
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("replay: %v: %s", err, stderr.String())
	}
	t.Logf("%d attempts saved before the input ended", n)
	set, err := rules.LoadSource("")
	if err != nil {
		t.Fatal(err)
	}
	want, err := analyzeFiles(t.Context(), "explain", loaded(set), []string{input}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range listStored(t, dbPath) {
		got[a.ID] = fingerprintAttempt(a)
	}
	if len(got) != len(want) || len(want) != 12*16 {
		t.Fatalf("%d attempts stored, explain finds %d (want %d)", len(got), len(want), 12*16)
	}
	for _, a := range want {
		if got[a.ID] != fingerprintAttempt(a) {
			t.Errorf("%s: stored %s, explain %s", a.ID, got[a.ID], fingerprintAttempt(a))
		}
	}
}
