// Package journaldtest gives tests a real systemd-journald (the one the
// machine runs, or one started standalone as root when none listens) and
// real journal files written by systemd-journal-remote.
package journaldtest

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/ingest"
)

// Socket is journald's native protocol socket.
const Socket = "/run/systemd/journal/socket"

// mu serializes Ensure within a test binary; a lock file does across
// binaries.
var mu sync.Mutex

// alive reports whether a journald accepts datagrams on Socket (a socket
// file left by a dead journald refuses the connection).
func alive() bool {
	c, err := net.Dial("unixgram", Socket)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Ensure makes sure a journald listens on Socket, starting
// /lib/systemd/systemd-journald standalone when none does. It looks on
// every call, not once per test binary: a journald that exits during a
// long run (it happened once on a fresh Debian root, cause unknown) is
// started again, and the test logs that. Test binaries of several packages
// run at once, so the start is serialized with a lock file. Without root
// (or without the binary) the test is skipped.
func Ensure(t testing.TB) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if alive() {
		return
	}
	if err := start(); err != nil {
		t.Skipf("needs a running systemd-journald (start it as root: mkdir -p /run/systemd/journal && /lib/systemd/systemd-journald &): %v", err)
	}
	t.Logf("no systemd-journald answered on %s: one runs now (started here or by another test binary)", Socket)
}

// start starts a standalone journald unless another test binary did
// meanwhile, and waits up to 5 s for it to answer.
func start() error {
	if os.Geteuid() != 0 {
		return os.ErrPermission
	}
	if err := os.MkdirAll("/run/systemd/journal", 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile("/run/systemd/analyzer-test-journald.lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if alive() { // another test binary started it meanwhile
		return nil
	}
	cmd := exec.Command("/lib/systemd/systemd-journald")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives this test binary
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reap it when it exits; it outlives the test
	for i := 0; i < 100; i++ {
		if alive() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return os.ErrNotExist
}

// JournalRemote is systemd-journal-remote, which writes journal files from
// export-format input (Debian package systemd-journal-remote).
const JournalRemote = "/lib/systemd/systemd-journal-remote"

// NeedJournalRemote skips the test when systemd-journal-remote, which
// writes the tests' journal files, is not installed (make test installs
// it as root).
func NeedJournalRemote(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(JournalRemote); err != nil {
		t.Skip("needs systemd-journal-remote (Debian package; make test installs it as root)")
	}
}

// ExportRecords converts a journalctl -o json capture to one export-format
// record each (systemd-journal-remote's input; unlike the native socket it
// sets trusted fields such as _SYSTEMD_UNIT). A non-empty host replaces
// _HOSTNAME, so that each test run has attempts of its own. Without
// systemd-journal-remote the test is skipped.
func ExportRecords(t testing.TB, path, host string) [][]byte {
	t.Helper()
	NeedJournalRemote(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<20), 4<<20)
	for sc.Scan() {
		rec, err := ingest.ParseJSONRecord(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			rec["_HOSTNAME"] = []byte(host)
		}
		out = append(out, Export(t, rec))
	}
	return out
}

// Export is one record in journal export format (systemd-journal-remote's
// input).
func Export(t testing.TB, rec ingest.Record) []byte {
	t.Helper()
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if err := ingest.WriteExport(w, rec); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	return b.Bytes()
}

// AppendJournal appends export records to a journal file (created when
// missing) with systemd-journal-remote.
func AppendJournal(t testing.TB, file string, recs [][]byte) {
	t.Helper()
	cmd := exec.Command(JournalRemote, "-o", file, "-")
	cmd.Stdin = bytes.NewReader(bytes.Join(recs, nil))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("systemd-journal-remote: %v: %s", err, out)
	}
}
