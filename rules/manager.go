package rules

import (
	"log/slog"
	"sync"
	"time"
)

// Target is what takes a new rule set from a Manager (*pipeline.Live has
// it). SetRules fails only once the target is closed.
type Target interface {
	SetRules(set *Set) error
}

// ReloadStatus is the outcome of the last load of a Manager's rule files.
type ReloadStatus struct {
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
	Time  time.Time `json:"time"`
}

// Status is a Manager's rule set in use and its last load: what GET
// /-/rules and POST /-/reload answer.
type Status struct {
	Source     string       `json:"source"` // the rule directory, or "builtin"
	Files      []string     `json:"files"`
	Engines    []string     `json:"engines"`
	Rules      int          `json:"rules"`
	LastReload ReloadStatus `json:"last_reload"`
}

// Manager holds the rule set in use and replaces it when asked to
// (SIGHUP, POST /-/reload), in the manner of Prometheus' rules
// Manager.Update: the directory is loaded and validated as a whole, and
// only a valid set replaces the one in use, atomically for every target;
// a set that does not load leaves the old one in place. It is safe for
// concurrent use.
type Manager struct {
	dir    string // "" = the built-in rules
	logger *slog.Logger

	mu       sync.Mutex
	set      *Set
	targets  []Target
	last     ReloadStatus
	observer func(st ReloadStatus, rules int)
}

// LoadSource loads the rule files of dir, or the built-in rules for "".
func LoadSource(dir string) (*Set, error) {
	if dir == "" {
		return LoadBuiltin()
	}
	return LoadDir(dir)
}

// NewManager loads the rules of dir (the built-in ones for ""); an invalid
// set at start is an error, not a fallback. Reloads are logged to logger
// (slog.Default() when nil).
func NewManager(dir string, logger *slog.Logger) (*Manager, error) {
	set, err := LoadSource(dir)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &Manager{dir: dir, logger: logger, set: set, last: ReloadStatus{OK: true, Time: time.Now()}}, nil
}

// Observe calls f with the last load's outcome and the number of rules in
// use now and after every Update (for the reload metrics of /metrics).
func (m *Manager) Observe(f func(st ReloadStatus, rules int)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.observer = f
	f(m.last, len(m.set.Rules()))
}

// Current is the rule set in use.
func (m *Manager) Current() *Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.set
}

// Add makes t receive every new set; it gets the current one at once, in
// case an Update happened since t was built.
func (m *Manager) Add(t Target) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.targets = append(m.targets, t)
	_ = t.SetRules(m.set) // only fails once t is closed
}

// Update reads the rule files again; why (such as "SIGHUP") is logged with
// the outcome. On success every target gets the new set; on failure the
// old set stays and the error (Errors: one file:line per problem, or the
// error reading the directory) is returned and recorded in Status.
func (m *Manager) Update(why string) error {
	set, err := LoadSource(m.dir)
	m.mu.Lock()
	m.last = ReloadStatus{OK: err == nil, Time: time.Now()}
	if err != nil {
		m.last.Error = err.Error()
	} else {
		m.set = set
		for _, t := range m.targets {
			_ = t.SetRules(set) // a closed pipeline is shutting down anyway
		}
	}
	if m.observer != nil {
		m.observer(m.last, len(m.set.Rules()))
	}
	cur := m.set
	m.mu.Unlock()
	if err != nil {
		m.logger.Error("rule reload failed, keeping the previous rules", "why", why, "err", err)
		return err
	}
	m.logger.Info("rules reloaded", "why", why, "files", len(cur.Files), "engines", len(cur.Engines()), "rules", len(cur.Rules()))
	return nil
}

// Status is the rule set in use and the last load.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := Status{Source: m.dir, Files: append([]string{}, m.set.Files...), Engines: []string{},
		Rules: len(m.set.Rules()), LastReload: m.last}
	if out.Source == "" {
		out.Source = "builtin"
	}
	for _, e := range m.set.Engines() {
		out.Engines = append(out.Engines, e.Name)
	}
	return out
}
