// Package domain holds the analyzer's vocabulary: journal entries, boot
// attempts, their phase, shape, verdict and findings. The identifiers are the
// product contract of ../shared/spec/README.md; renaming one breaks users'
// alerts and saved queries. This package imports nothing of ours.
package domain

import (
	"errors"
	"fmt"
	"time"
)

// Entry is one normalized journal record or plain-text line, after ingest has
// reassembled split lines, decoded byte arrays and stripped ANSI escapes.
type Entry struct {
	// Cursor identifies the entry in its source: journald's __CURSOR, or
	// "FILE:OFFSET" for plain text. Evidence and ingest positions use it.
	Cursor string
	// Time is __REALTIME_TIMESTAMP (or the text line's own stamp when known).
	Time time.Time
	// Host is _HOSTNAME.
	Host string
	// Unit is _SYSTEMD_UNIT: the unit whose cgroup wrote the record.
	Unit string
	// InvocationID is _SYSTEMD_INVOCATION_ID of the writer.
	InvocationID string
	// PID is _PID.
	PID int
	// Identifier is SYSLOG_IDENTIFIER.
	Identifier string
	// Message is MESSAGE as text: ANSI escapes removed, tqdm '\r' segments
	// turned into separate lines ('\n'), trailing newline removed. It may
	// hold several lines.
	Message string
	// Fields holds every other field of the record as text (UNIT,
	// INVOCATION_ID, MESSAGE_ID, EXIT_CODE, EXIT_STATUS, UNIT_RESULT,
	// N_RESTARTS, JOB_TYPE, JOB_RESULT, CONTAINER_NAME, CONTAINER_ID_FULL,
	// PODMAN_EVENT, PODMAN_NAME, PODMAN_ID, _TRANSPORT, _STREAM_ID, ...).
	// A repeated field keeps its last value. Entries of one stream may
	// share the map: it is read-only.
	Fields map[string]string
	// Truncated is set when journalctl printed MESSAGE as null (a field of
	// 4096 bytes or more without --all): the text is lost, not the record.
	Truncated bool
	// Source names where the entry came from (file path, "-", "journal").
	Source string
	// Journal marks a journal record (journalctl JSON or export, the live
	// journal, a Loki push), as opposed to a line of plain text: a record
	// that names no unit or container belongs to no attempt.
	Journal bool
}

// Field returns the named field, or "" when absent.
func (e *Entry) Field(name string) string {
	if e.Fields == nil {
		return ""
	}
	return e.Fields[name]
}

// Phase is where a boot attempt stands. Phases are ordered; see PhaseOrder.
type Phase string

// Phases in boot order (spec: "Phases (ordered)").
const (
	PhaseStart        Phase = "start"
	PhaseArgs         Phase = "args"
	PhaseInit         Phase = "init"
	PhaseWeights      Phase = "weights"
	PhaseCompile      Phase = "compile"
	PhaseProfile      Phase = "profile"
	PhaseKVAlloc      Phase = "kv_alloc"
	PhaseGraphCapture Phase = "graph_capture"
	PhaseWarmup       Phase = "warmup"
	PhaseReady        Phase = "ready"
	PhaseServing      Phase = "serving"
	PhaseShutdown     Phase = "shutdown"
	PhaseExited       Phase = "exited"
)

var phaseRank = map[Phase]int{
	PhaseStart: 0, PhaseArgs: 1, PhaseInit: 2, PhaseWeights: 3, PhaseCompile: 4,
	PhaseProfile: 5, PhaseKVAlloc: 6, PhaseGraphCapture: 7, PhaseWarmup: 8,
	PhaseReady: 9, PhaseServing: 10, PhaseShutdown: 11, PhaseExited: 12,
}

// Rank is the phase's position in boot order, -1 for an unknown phase.
func (p Phase) Rank() int {
	if r, ok := phaseRank[p]; ok {
		return r
	}
	return -1
}

// Valid reports whether p is one of the spec's phases.
func (p Phase) Valid() bool { return p.Rank() >= 0 }

// Verdict is the primary root cause of an attempt (spec: "Verdicts").
type Verdict string

// Verdicts of the spec.
const (
	VerdictRunning             Verdict = "running"
	VerdictReady               Verdict = "ready"
	VerdictOOMWeights          Verdict = "oom_weights"
	VerdictOOMProfile          Verdict = "oom_profile"
	VerdictOOMKVAlloc          Verdict = "oom_kv_alloc"
	VerdictOOMGraphCapture     Verdict = "oom_graph_capture"
	VerdictOOMRuntime          Verdict = "oom_runtime"
	VerdictKVCacheInsufficient Verdict = "kv_cache_insufficient"
	VerdictDynamoConstraint    Verdict = "dynamo_constraint_violation"
	VerdictCompileError        Verdict = "compile_error"
	VerdictConfigError         Verdict = "config_error"
	VerdictMissingPayload      Verdict = "missing_payload"
	VerdictDistributedError    Verdict = "distributed_error"
	VerdictEngineDied          Verdict = "engine_died"
	VerdictTimeout             Verdict = "timeout"
	VerdictStopped             Verdict = "stopped"
	VerdictUnknownFailure      Verdict = "unknown_failure"
)

// Findings that are never a verdict (spec: "Findings that are not root causes").
const (
	FindingCleanExitWorkerDeath = "clean_exit_worker_death"
	FindingCrashLoop            = "crash_loop"
	FindingLogLoss              = "log_loss"
	FindingBootStalled          = "boot_stalled"
	FindingBootNotSurvivable    = "boot_not_survivable"
)

// Verdicts lists every verdict of the spec, in the spec's order.
var Verdicts = []Verdict{
	VerdictRunning, VerdictReady, VerdictOOMWeights, VerdictOOMProfile,
	VerdictOOMKVAlloc, VerdictOOMGraphCapture, VerdictOOMRuntime,
	VerdictKVCacheInsufficient, VerdictDynamoConstraint, VerdictCompileError,
	VerdictConfigError, VerdictMissingPayload, VerdictDistributedError,
	VerdictEngineDied, VerdictTimeout, VerdictStopped, VerdictUnknownFailure,
}

// NonRootFindings lists the findings that are never a verdict.
var NonRootFindings = []string{
	FindingCleanExitWorkerDeath, FindingCrashLoop, FindingLogLoss, FindingBootNotSurvivable, FindingBootStalled,
}

// IsFailure reports whether the verdict names a failure (not running,
// ready or stopped).
func (v Verdict) IsFailure() bool {
	switch v {
	case "", VerdictRunning, VerdictReady, VerdictStopped:
		return false
	}
	return true
}

// Severity of a finding, mapped to a journald PRIORITY by notes writers.
type Severity string

// Severities, most severe first.
const (
	SeverityCritical Severity = "critical"
	SeverityError    Severity = "error"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// Evidence is one log line that supports a finding.
type Evidence struct {
	Time    time.Time `json:"time"`
	Cursor  string    `json:"cursor,omitempty"`
	Message string    `json:"message"`
	// Role is what the line stands for in the judge's state, set on the
	// lines of Attempt.Evidence only (not on a finding's or the context's):
	// it lets a later run that continues the attempt put each line back
	// where it was (judge.Judge.Restore). Zero when not known (lines stored
	// before roles were). It is not part of the explain contract.
	Role EvidenceRole `json:"-"`
}

// Finding is one rule that fired on an attempt.
type Finding struct {
	// ID is a verdict or a non-root finding id of the spec.
	ID string `json:"id"`
	// Rule is the id of the rule that fired, e.g. "vllm.oom_graph_capture".
	Rule string `json:"rule"`
	// Severity comes from the rule.
	Severity Severity `json:"severity"`
	// MessageID is the rule's stable journald MESSAGE_ID (32 hex digits).
	MessageID string `json:"message_id,omitempty"`
	// Phase is the attempt's phase when the rule fired.
	Phase Phase `json:"phase"`
	// Time is when the rule fired (the decisive line's time).
	Time time.Time `json:"time"`
	// Note is the rule's note template filled in.
	Note string `json:"note,omitempty"`
	// Captures are the named regexp captures of the decisive line.
	Captures map[string]string `json:"captures,omitempty"`
	// Match is the text the rule matched in the decisive line (the first
	// evidence line), at most 1 KiB, so a viewer can mark it; "" for
	// findings raised without a line match.
	Match string `json:"match,omitempty"`
	// Evidence holds the decisive line(s).
	Evidence []Evidence `json:"evidence,omitempty"`
}

// PhaseMark records when an attempt entered a phase.
type PhaseMark struct {
	Phase Phase     `json:"phase"`
	Time  time.Time `json:"time"`
	// Cursor and Message are the line that moved the attempt into Phase.
	Cursor  string `json:"cursor,omitempty"`
	Message string `json:"message,omitempty"`
}

// Ended-by values of an attempt (spec: `ended_by`).
const (
	EndedByExit     = "exit"
	EndedByStop     = "stop"
	EndedByReplaced = "replaced"
)

// Attempt is one boot attempt: one start of an engine, from its unit or
// container start until it exits, is stopped or is replaced.
type Attempt struct {
	// ID is stable across replays: derived from host, unit and invocation
	// (or container id, or source and first cursor for plain text).
	ID            string
	Host          string
	Unit          string
	InvocationID  string
	Container     string // CONTAINER_NAME / PODMAN_NAME
	ContainerID   string // CONTAINER_ID_FULL / PODMAN_ID
	Engine        string // spec engine family, "unknown" when undetected
	EngineVersion string
	StartedAt     time.Time
	EndedAt       time.Time // zero while running
	ReadyAt       time.Time // zero unless the engine reported readiness
	Phase         Phase
	Verdict       Verdict
	Rule          string // rule that set the verdict
	Note          string // the verdict's note
	Findings      []Finding
	// ExitStatus is the main process's exit status (EXIT_STATUS, 0 for
	// "Deactivated successfully"); nil when unknown.
	ExitStatus *int
	// ExitCode is systemd's EXIT_CODE: exited, killed, dumped.
	ExitCode string
	// EndedBy is one of EndedBy*, "" while still running.
	EndedBy string
	// StopRequested: systemd logged the unit's stop job ("Stopping ...")
	// during the attempt, so its end is a stop, not an exit.
	StopRequested bool
	// RestartCounter is N_RESTARTS of the scheduled restart that started
	// this attempt; nil when it was not started by a restart.
	RestartCounter *int
	// RestartCounterAfter is N_RESTARTS of the restart systemd scheduled
	// after this attempt ended; nil when none was scheduled.
	RestartCounterAfter *int
	Shape               Shape
	Timeline            []PhaseMark
	// Evidence is the union of the findings' evidence, in time order, plus
	// the last error-looking lines for an unknown failure.
	Evidence []Evidence
	// Context holds the lines around the decisive one (for the UI).
	Context []Evidence
	// Fingerprint groups identical unknown failures (masked last exception).
	Fingerprint string
	// Lines counts the log lines attributed to the attempt.
	Lines int
	// LastLineAt is the time of the newest line attributed to the attempt
	// (its source's clock); zero when unknown (no line, or text without
	// times). A boot whose phase no earlier boot tells has stalled when
	// this is older than the quiet limit (package progress).
	LastLineAt time.Time
	// Log is the attempt's own log as kept for the viewer; nil when the
	// tracker keeps none (explain) or the attempt was loaded without it.
	Log *AttemptLog
	// Version is the attempt's change version in the tracker that judged
	// it: it increases whenever anything SaveAttempts stores of the
	// attempt may have changed (a line judged, a finding, the lifecycle,
	// container, restart counters, the zone its times are shown in, the
	// rule set), so two judgements of one attempt with the same Version
	// are equal and the live pipeline saves an attempt only when its
	// Version moved. Versions come from one counter per tracker and never
	// repeat in it, even for an attempt forgotten and started again. It is
	// not stored (0 when loaded from the database): it only orders the
	// judgements one process made.
	Version uint64
}

// LogHead and LogTail are how many of an attempt's lines are kept: its
// first LogHead (the boot) and, once it has ended, its last LogTail (the
// death). LogBytes caps each part's message bytes.
const (
	LogHead  = 2000
	LogTail  = 1000
	LogBytes = 1 << 20
)

// AttemptLog is the part of an attempt's log the analyzer keeps.
type AttemptLog struct {
	// Lines are in log order; Seq numbers them from 0 among all the
	// attempt's lines, so a gap between two Seqs is lines not kept.
	Lines []LogLine
	// Total is how many lines the attempt had.
	Total int
}

// LogLine is one kept line of an attempt's log. It has no journal cursor:
// at ~90 bytes, cursors were half of a short line's stored size.
type LogLine struct {
	Seq     int
	Time    time.Time
	Message string
}

// HasFinding reports whether a finding with that id fired.
func (a *Attempt) HasFinding(id string) bool {
	for _, f := range a.Findings {
		if f.ID == id {
			return true
		}
	}
	return false
}

// FindingIDs returns the ids of the findings, in firing order, without duplicates.
func (a *Attempt) FindingIDs() []string {
	out := []string{}
	seen := map[string]bool{}
	for _, f := range a.Findings {
		if !seen[f.ID] {
			seen[f.ID] = true
			out = append(out, f.ID)
		}
	}
	return out
}

// AttemptFilter selects attempts. Empty strings, empty lists and zero
// times do not filter; the conditions that are set must all hold.
type AttemptFilter struct {
	// Host, Unit, Engine and Verdict match exactly.
	Host, Unit, Engine, Verdict string
	// Hosts, Units, Engines and Verdicts match any of their values (a
	// repeated query parameter: verdict=a&verdict=b). A list and its
	// singular field above must both hold when both are set.
	Hosts, Units, Engines, Verdicts []string
	// Findings keeps attempts where any of these findings fired (a verdict
	// or a non-root finding id of the spec: crash_loop, ...).
	Findings []string
	// Failed keeps failed attempts only (Verdict.IsFailure: not running,
	// ready or stopped), as `analyzer explain --failed` does.
	Failed bool
	// Group keeps the attempts of one failure group (FailureGroup.ID).
	Group string
	// Search keeps the attempts whose id, invocation id or container id
	// equals it or starts with it (at least SearchMinLength characters
	// for a prefix), or whose container name equals it.
	Search string
	// Cursor, when set, starts the page after (or, Backward, before) the
	// attempt it names, in the list's order (PageAttempts).
	Cursor *PageCursor
	// Since keeps attempts started at or after it; Until keeps attempts
	// started before it. Attempts with an unknown start time are left out
	// when either is set.
	Since, Until time.Time
	// WallClock compares Since and Until with each attempt's start on its
	// host's own clock (the offset the start was logged with): 00:00 is
	// midnight on every host. Only the clock reading of Since and Until
	// counts then, not their zone.
	WallClock bool
	// IDs, when not empty, keeps only these attempts.
	IDs []string
	// Limit caps the number of attempts returned; 0 or less means no cap.
	Limit int
	// Brief leaves out the evidence and context lines, of the attempts and
	// of their findings, and the timeline: what a list or a ladder shows
	// does not need them, and they are most of an attempt's bytes.
	Brief bool
}

// ErrNotFound is returned when an attempt id is unknown.
var ErrNotFound = errors.New("attempt not found")

// signalNames are the Linux signal numbers systemd reports in EXIT_STATUS
// when EXIT_CODE is killed or dumped.
var signalNames = map[int]string{1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS",
	8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM"}

// ExitDescription says how the main process ended in systemd's terms:
// "exited with status 1", "killed by signal 9 (SIGKILL)", "dumped core on
// signal 11 (SIGSEGV)"; "" when the journal did not say.
func (a *Attempt) ExitDescription() string {
	if a.ExitStatus == nil {
		return ""
	}
	n := *a.ExitStatus
	sig := fmt.Sprint(n)
	if name, ok := signalNames[n]; ok {
		sig += " (" + name + ")"
	}
	switch a.ExitCode {
	case "killed":
		return "killed by signal " + sig
	case "dumped":
		return "dumped core on signal " + sig
	}
	return fmt.Sprintf("exited with status %d", n)
}
