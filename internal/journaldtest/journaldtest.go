// Package journaldtest gives tests a real systemd-journald: the one the
// machine runs, or one started standalone (as root) when none listens.
package journaldtest

import (
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Socket is journald's native protocol socket.
const Socket = "/run/systemd/journal/socket"

var (
	once    sync.Once
	started error
)

// Ensure makes sure a journald listens on Socket, starting
// /lib/systemd/systemd-journald standalone when none does. Without root
// (or without the binary) the test is skipped.
func Ensure(t testing.TB) {
	t.Helper()
	once.Do(func() {
		if _, err := os.Stat(Socket); err == nil {
			return
		}
		if os.Geteuid() != 0 {
			started = os.ErrPermission
			return
		}
		if err := os.MkdirAll("/run/systemd/journal", 0o755); err != nil {
			started = err
			return
		}
		cmd := exec.Command("/lib/systemd/systemd-journald")
		if err := cmd.Start(); err != nil {
			started = err
			return
		}
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(Socket); err == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		started = os.ErrNotExist
	})
	if started != nil {
		t.Skipf("needs a running systemd-journald (start it as root: mkdir -p /run/systemd/journal && /lib/systemd/systemd-journald &): %v", started)
	}
}
