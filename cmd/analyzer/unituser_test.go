package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/llmfleet/analyzer/deploy"
	"github.com/llmfleet/analyzer/internal/journaldtest"
)

// TestMain runs the tests, or, in the process TestFollowerReadsAsUnitUser
// starts under another user (ANALYZER_SERVE_HELPER set to serve's
// arguments), `analyzer serve` itself.
func TestMain(m *testing.M) {
	if args := os.Getenv("ANALYZER_SERVE_HELPER"); args != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		err := run(ctx, strings.Split(args, "\x1f"))
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Output is compared as a pipe gives it: a COLUMNS the shell exported
	// would cut it (TestExplainWidth sets its own).
	os.Unsetenv("COLUMNS")
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// unitCredentials reads the user and groups the shipped unit runs serve
// with: DynamicUser=yes gives a fresh uid/gid of its own (61184–65519),
// SupplementaryGroups the named groups.
func unitCredentials(t *testing.T) *syscall.Credential {
	t.Helper()
	unit, err := deploy.Files.ReadFile("systemd/analyzer.service")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^DynamicUser=yes$`).Find(unit)
	groups := regexp.MustCompile(`(?m)^SupplementaryGroups=(.*)$`).FindSubmatch(unit)
	if m == nil || groups == nil {
		t.Fatalf("the unit has no DynamicUser=yes or SupplementaryGroups=:\n%s", unit)
	}
	cred := &syscall.Credential{Uid: 61999, Gid: 61999}
	for _, name := range strings.Fields(string(groups[1])) {
		g, err := user.LookupGroup(name)
		if err != nil {
			t.Skipf("group %s of SupplementaryGroups= does not exist here: %v", name, err)
		}
		gid, _ := strconv.Atoi(g.Gid)
		cred.Groups = append(cred.Groups, uint32(gid))
	}
	return cred
}

// TestFollowerReadsAsUnitUser runs `analyzer serve` following the local
// journal of a real systemd-journald under the shipped unit's user and
// groups (an unprivileged uid, supplementary group systemd-journal, on a
// journal directory set up by systemd-tmpfiles as on a host) and checks
// that it reads the entries journald receives; the same uid without the
// group reads none, so the group is what lets it read.
func TestFollowerReadsAsUnitUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it starts journald, sets up the journal directory with systemd-tmpfiles and runs serve as another user")
	}
	journaldtest.Ensure(t)
	tmpfiles, err := exec.LookPath("systemd-tmpfiles")
	if err != nil {
		t.Skip("needs systemd-tmpfiles to give the journal its group as on a host")
	}
	// What systemd-tmpfiles-setup.service does at boot: the journal
	// directories and files belong to group systemd-journal (2755/2750/0640).
	if out, err := exec.Command(tmpfiles, "--create", "--prefix=/run/log/journal", "--prefix=/var/log/journal").CombinedOutput(); err != nil {
		t.Logf("systemd-tmpfiles: %v: %s", err, out) // warnings about other lines are fine
	}
	cred := unitCredentials(t)

	// The test binary and a database directory the unit's user can use.
	dir, err := os.MkdirTemp("", "analyzer-unituser-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "analyzer.test")
	copyFile(t, exe, bin, 0o755)

	serveAs := func(cred *syscall.Credential, name, reader string) (base string, stop func() string) {
		data := filepath.Join(dir, name)
		if err := os.Mkdir(data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(data, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
		addr := freeAddr(t)
		args := []string{"serve", "--db", filepath.Join(data, "a.db"), "--listen", addr, "--no-notes", "--journal-reader", reader,
			"--since", time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}
		cmd := exec.Command(bin)
		cmd.Env = []string{"ANALYZER_SERVE_HELPER=" + strings.Join(args, "\x1f"), "PATH=" + os.Getenv("PATH"), "HOME=" + data}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var logs strings.Builder
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }() // a TERM or KILL exit status is expected
		base = "http://" + addr
		waitFor(t, "serve as uid "+strconv.Itoa(int(cred.Uid))+" to answer", func() bool {
			select {
			case <-done:
				t.Fatalf("serve exited: %s", logs.String())
			default:
			}
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return true
		})
		return base, func() string {
			_ = cmd.Process.Signal(syscall.SIGTERM) // already gone: done is closed
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			return logs.String()
		}
	}
	entries := func(base string) float64 {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), `analyzer_ingest_entries_total{source="journal"} `); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		return 0
	}

	// With the unit's groups: the entries journald receives are read, by
	// journalctl (a child, same credentials) and by sd-journal in process.
	marker := fmt.Sprintf("analyzer unit-user test %d", time.Now().UnixNano())
	var stopLogsUnit string
	for _, reader := range []string{"journalctl", "sd-journal"} {
		base, stop := serveAs(cred, "unit-"+reader, reader)
		deadline := time.Now().Add(30 * time.Second)
		for entries(base) == 0 {
			if err := journal.Send(marker, journal.PriInfo, map[string]string{"SYSLOG_IDENTIFIER": "analyzer-test"}); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve (%s) as uid %d with groups %v read no journal entry in 30 s:\n%s", reader, cred.Uid, cred.Groups, stop())
			}
			time.Sleep(200 * time.Millisecond)
		}
		stopLogsUnit = stop()
		if !strings.Contains(stopLogsUnit, "following the local journal") || !strings.Contains(stopLogsUnit, "notes=\"off (--no-notes)\"") {
			t.Errorf("serve (%s) did not say it follows the local journal without notes:\n%s", reader, stopLogsUnit)
		}
		if strings.Contains(stopLogsUnit, "no local journal file or directory is readable") {
			t.Errorf("serve (%s) with the group warned that it cannot read the journal:\n%s", reader, stopLogsUnit)
		}
	}

	// Without the group: the same uid reads nothing (journalctl opens no
	// file), which is what the unit's SupplementaryGroups= prevents.
	base, stop := serveAs(&syscall.Credential{Uid: cred.Uid, Gid: cred.Gid}, "nogroup", "journalctl")
	for i := 0; i < 10; i++ {
		_ = journal.Send(marker+" again", journal.PriInfo, map[string]string{"SYSLOG_IDENTIFIER": "analyzer-test"})
		time.Sleep(200 * time.Millisecond)
	}
	n := entries(base)
	logs := stop()
	if n != 0 {
		t.Errorf("without systemd-journal the uid read %v entries: the test does not show that the group matters", n)
	}
	if !strings.Contains(logs, "no local journal file or directory is readable") || !strings.Contains(logs, "SupplementaryGroups=systemd-journal") {
		t.Errorf("serve without the group did not warn that it cannot read the journal:\n%s", logs)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
