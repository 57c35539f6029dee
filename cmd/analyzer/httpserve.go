package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/spf13/pflag"

	"github.com/llmfleet/analyzer/store"
	"github.com/llmfleet/analyzer/web"
	"github.com/llmfleet/analyzer/web/httpauth"
)

// httpFlags are serve's HTTP server settings.
type httpFlags struct {
	allowedHosts                           string
	readTimeout, writeTimeout, idleTimeout time.Duration
	maxConns                               int
}

func addHTTPFlags(fs *pflag.FlagSet) *httpFlags {
	hf := &httpFlags{}
	fs.StringVar(&hf.allowedHosts, "allowed-hosts", "",
		"comma-separated host names the server answers for (default on a loopback --listen: localhost, 127.0.0.1, ::1; else any)")
	fs.DurationVar(&hf.readTimeout, "read-timeout", 30*time.Second, "longest time to read a request, body included (a slow client is cut off)")
	fs.DurationVar(&hf.writeTimeout, "write-timeout", 60*time.Second, "longest time to write a response")
	fs.DurationVar(&hf.idleTimeout, "idle-timeout", 60*time.Second, "how long an idle keep-alive connection is kept")
	fs.IntVar(&hf.maxConns, "max-connections", 256, "connections served at once; more wait in the kernel's backlog")
	return hf
}

// allowed is the Host allow-list for a listen address.
func (hf *httpFlags) allowed(listen string) []string {
	if hf.allowedHosts != "" {
		var out []string
		for _, h := range strings.Split(hf.allowedHosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				out = append(out, h)
			}
		}
		return out
	}
	if httpauth.Loopback(listen) {
		return web.LoopbackHosts
	}
	return nil
}

// minFreeDisk is the free space below which the health check fails: the
// database and its WAL need room to save.
const minFreeDisk = 256 << 20

// healthChecks are serve's health checks beside the database's answer to
// a real read: the file passed SQLite's quick_check at start (run in the
// background: it reads the whole file; "checking" until it ends), it takes
// writes, the disk it is on has room, and the journal follower (when one
// runs) is alive and its pipeline takes what it reads.
func healthChecks(ctx context.Context, db *store.DB, dbPath string, fol *follower) func() []web.Check {
	var integrity atomic.Pointer[web.Check]
	integrity.Store(&web.Check{Name: "database-integrity", OK: true, Detail: "checking"})
	go func() {
		ch := web.Check{Name: "database-integrity", OK: true}
		if err := db.QuickCheck(ctx); err != nil && ctx.Err() == nil {
			slog.Error("the database failed its integrity check", "db", dbPath, "err", err)
			ch = web.Check{Name: "database-integrity", Detail: err.Error()}
		}
		integrity.Store(&ch)
	}()
	return func() []web.Check {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		checks := []web.Check{*integrity.Load(), {Name: "database-writes", OK: true}}
		if err := db.Writable(ctx); err != nil {
			checks[1] = web.Check{Name: "database-writes", Detail: err.Error()}
		}
		var st syscall.Statfs_t
		disk := web.Check{Name: "disk", OK: true}
		if err := syscall.Statfs(filepath.Dir(dbPath), &st); err != nil {
			disk = web.Check{Name: "disk", Detail: err.Error()}
		} else if free := uint64(st.Bavail) * uint64(st.Bsize); free < minFreeDisk {
			disk = web.Check{Name: "disk", Detail: fmt.Sprintf("%d MiB free, less than %d MiB", free>>20, minFreeDisk>>20)}
		}
		checks = append(checks, disk)
		if fol != nil {
			ok, why := fol.health()
			checks = append(checks, web.Check{Name: "journal-follower", OK: ok, Detail: why})
		}
		return checks
	}
}

// limitMemory sets the Go runtime's soft memory limit when GOMEMLIMIT does
// not: 80 % of the cgroup's memory.max (the unit's MemoryMax), else 1 GiB,
// so that a burst is met by collecting more often before the kernel's OOM
// killer meets it.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(1 << 30)
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			limit = n / 10 * 8
		}
	}
	debug.SetMemoryLimit(limit)
}

// notifySystemd tells systemd (Type=notify) that serve is ready, and with
// WatchdogSec set pets the watchdog every half interval while the database
// takes writes and the journal follower runs: systemd restarts an analyzer
// that stopped doing its job, not only one that exited. Outside systemd
// (no NOTIFY_SOCKET) it does nothing.
func notifySystemd(ctx context.Context, health func() []web.Check) {
	if ok, err := daemon.SdNotify(false, daemon.SdNotifyReady); !ok || err != nil {
		return
	}
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil || interval <= 0 {
		return
	}
	go func() {
		t := time.NewTicker(interval / 2)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
				return
			case <-t.C:
			}
			alive := true
			for _, c := range health() {
				if !c.OK && (c.Name == "database-writes" || c.Name == "journal-follower") {
					alive = false
					slog.Error("health check failing: not petting the watchdog", "check", c.Name, "detail", c.Detail)
				}
			}
			if alive {
				_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
			}
		}
	}()
}
