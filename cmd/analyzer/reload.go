package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/llmfleet/analyzer/metrics"
	"github.com/llmfleet/analyzer/rules"
)

// Paths of serve's rule endpoints.
const (
	reloadPath = "/-/reload"
	rulesPath  = "/-/rules"
)

// rulesTarget is what takes a new rule set (*pipeline.Live has it).
type rulesTarget interface {
	SetRules(set *rules.Set) error
}

// reloadStatus is the outcome of the last load of the rule files.
type reloadStatus struct {
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
	Time  time.Time `json:"time"`
}

// ruleReloader holds serve's rule set and replaces it on SIGHUP and
// POST /-/reload. A set that does not load leaves the one in use in place.
// It is safe for concurrent use.
type ruleReloader struct {
	dir     string // "" = the built-in rules
	token   string // when set, POST /-/reload needs it as a bearer token
	metrics *metrics.Metrics

	mu      sync.Mutex
	set     *rules.Set
	targets []rulesTarget
	last    reloadStatus
}

// newRuleReloader loads the rules of dir (the built-in ones for ""); an
// invalid set at start is an error, not a fallback.
func newRuleReloader(dir, token string) (*ruleReloader, error) {
	set, err := loadRules(dir)
	if err != nil {
		return nil, err
	}
	return &ruleReloader{dir: dir, token: token, set: set, last: reloadStatus{OK: true, Time: time.Now()}}, nil
}

// setMetrics exports the reload metrics to m from now on.
func (rl *ruleReloader) setMetrics(m *metrics.Metrics) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.metrics = m
	m.RulesReloaded(rl.last.OK, rl.last.Time, len(rl.set.Rules()))
}

// current is the rule set in use.
func (rl *ruleReloader) current() *rules.Set {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.set
}

// add makes t receive every new set; it gets the current one at once, in
// case a reload happened since t was built.
func (rl *ruleReloader) add(t rulesTarget) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.targets = append(rl.targets, t)
	_ = t.SetRules(rl.set) // only fails once t is closed
}

// reload reads the rule files again. On success every target gets the new
// set; on failure the old set stays and the error (rules.Errors: one
// file:line per problem) is returned and recorded.
func (rl *ruleReloader) reload() error {
	set, err := loadRules(rl.dir)
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.last = reloadStatus{OK: err == nil, Time: time.Now()}
	if err != nil {
		rl.last.Error = err.Error()
	} else {
		rl.set = set
		for _, t := range rl.targets {
			_ = t.SetRules(set) // a closed pipeline is shutting down anyway
		}
	}
	rl.metrics.RulesReloaded(rl.last.OK, rl.last.Time, len(rl.set.Rules()))
	return err
}

// reloadAndLog is reload with its outcome on stderr.
func (rl *ruleReloader) reloadAndLog(why string) error {
	err := rl.reload()
	if err != nil {
		fmt.Fprintf(os.Stderr, "analyzer: rule reload (%s) failed, keeping the previous rules:\n%v\n", why, err)
		return err
	}
	set := rl.current()
	fmt.Fprintf(os.Stderr, "analyzer: rules reloaded (%s): %d files, %d engines, %d rules\n",
		why, len(set.Files), len(set.Engines()), len(set.Rules()))
	return nil
}

// watchSIGHUP reloads on every SIGHUP until ctx ends.
func (rl *ruleReloader) watchSIGHUP(ctx context.Context) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				_ = rl.reloadAndLog("SIGHUP")
			}
		}
	}()
}

// rulesJSON is GET /-/rules and the answer of POST /-/reload: the set in
// use (file names, engine names, number of rules) and the last load.
type rulesJSON struct {
	Source     string       `json:"source"` // the --rules directory, or "builtin"
	Files      []string     `json:"files"`
	Engines    []string     `json:"engines"`
	Rules      int          `json:"rules"`
	LastReload reloadStatus `json:"last_reload"`
}

func (rl *ruleReloader) status() rulesJSON {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	out := rulesJSON{Source: rl.dir, Files: append([]string{}, rl.set.Files...), Engines: []string{},
		Rules: len(rl.set.Rules()), LastReload: rl.last}
	if out.Source == "" {
		out.Source = "builtin"
	}
	for _, e := range rl.set.Engines() {
		out.Engines = append(out.Engines, e.Name)
	}
	return out
}

// statusHandler serves GET /-/rules.
func (rl *ruleReloader) statusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, rl.status())
	})
}

// reloadHandler serves POST /-/reload: 200 with the new status, 400 when
// the rule files do not load (the body's last_reload.error lists
// file:line problems), 500 when they cannot be read at all, 401 without
// the push token when one is set, 403 from a non-loopback client when no
// token is set.
func (rl *ruleReloader) reloadHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rl.token != "" {
			if !bearerOK(r, rl.token) {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
				return
			}
		} else if !loopbackPeer(r.RemoteAddr) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "reload is allowed from loopback only unless --push-token is set"})
			return
		}
		err := rl.reloadAndLog("POST " + reloadPath)
		code := http.StatusOK
		var errs rules.Errors
		switch {
		case errors.As(err, &errs):
			code = http.StatusBadRequest
		case err != nil:
			code = http.StatusInternalServerError
		}
		writeJSON(w, code, rl.status())
	})
}

// bearerOK compares the request's bearer token with want in constant time
// (as the Loki push receiver does).
func bearerOK(r *http.Request, want string) bool {
	h := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(h[len(prefix):])))
	exp := sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(got[:], exp[:]) == 1
}

// loopbackPeer reports whether a request's remote address is loopback.
func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
