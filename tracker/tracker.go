// Package tracker cuts a stream of normalized journal entries into boot
// attempts and follows each attempt's phase, shape and findings with a rule
// set. It is the core between ingest (entries in) and store/web (attempts
// out); it does no I/O.
//
// Attempt identity, strongest first (spec "Boot attempt"): the unit's
// invocation (_SYSTEMD_INVOCATION_ID, or UNIT + INVOCATION_ID on PID 1's
// records), the container (CONTAINER_ID_FULL, mapped to the unit that
// started it through podman events sent from inside the unit), and for a
// plain-text log the engine's start banner.
package tracker

import (
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// systemd catalog MESSAGE_IDs of unit lifecycle records (systemd's
// catalog/systemd.catalog.in).
const (
	msgUnitStarting    = "7d4958e842da4a758f6c1cdc7b36dcc5"
	msgUnitStarted     = "39f53479d3a045ac8e11786248231fbf"
	msgUnitStopping    = "de5b426a63be47a7b6ac3eaac82e2f6f"
	msgUnitStopped     = "9d1aaa27d60140bd96365438aad20286"
	msgUnitFailed      = "d9b373ed55a64feb8242e02dbe79a49c"
	msgUnitExited      = "98e322203f7a4ed290d09fe03c09fe15"
	msgUnitSuccess     = "7ad2d189f7e94e70a38c781354912448"
	msgUnitRestart     = "5eb03494b6584870a536b337290809b3"
	msgUnitFailedStart = "be02cf6855d2428ba40df7e9d022f03d"
	msgSuppressed      = "a596d6fe7bfa4994828e72309e95d61e"
)

// MESSAGE_IDs of the findings the tracker raises itself (README, "Stable
// MESSAGE_IDs").
const (
	messageIDUnknownFailure = "c4deb1c694538b4d8d75dce263d1534e"
	messageIDLogLoss        = "d7bd97a9522bf7b670303457da23dd0c"
)

// LogLossField marks an entry that ingest could not reassemble; its value
// says why (ingest.FieldLogLoss; the tracker does not import ingest).
const LogLossField = "ANALYZER_LOG_LOSS"

// GapField marks a synthetic entry a journal follower sends when part of
// the journal is gone (a vacuumed cursor); its value says what was lost.
// Every attempt open at that point, and the next one to start, get a
// log_loss finding.
const GapField = "ANALYZER_JOURNAL_GAP"

// Options tune the tracker. Zero values take the defaults.
type Options struct {
	// SurvivableWindow is how long after ready a death still counts as
	// boot_not_survivable (default 30 min).
	SurvivableWindow time.Duration
	// ContextBefore and ContextAfter are how many lines before and after
	// the decisive line are kept for the UI (default 8 and 6).
	ContextBefore, ContextAfter int
}

// Tracker holds the attempts seen so far. It is not safe for concurrent use.
type Tracker struct {
	rules *rules.Set
	opt   Options

	attempts     []*state
	byKey        map[string]*state  // host|unit|invocation
	lastByUnit   map[string]*state  // host|unit
	byContainer  map[string]*state  // CONTAINER_ID_FULL / PODMAN_ID
	byName       map[string]*state  // host|container name → latest attempt that started it
	engineUnits  map[string]bool    // host|unit seen running an engine
	textCurrent  map[string]*state  // plain-text source → current attempt
	nextRestarts map[string]restart // host|unit → the restart systemd scheduled
	pendingGap   *domain.Entry      // a journal gap the next attempt inherits
	// zones holds each host's UTC offset, learned from the first engine
	// line with a local wall-clock stamp; attempts show their times in it.
	zones map[string]*time.Location
	// resumable holds stored open attempts (Resume) by host|unit|invocation
	// until an entry of theirs arrives; resumableCID maps their container.
	resumable    map[string]*domain.Attempt
	resumableCID map[string]string
	knownZones   map[string]*time.Location // KnowZone: used when zones has none
	scan         rules.Line                // the line being judged (reused)
	env          rules.LineEnv             // its rule environment (reused)
}

// restart is a "Scheduled restart job" record: its N_RESTARTS and cursor.
type restart struct {
	n      int
	cursor string
}

// state is the tracker's working copy of one attempt.
type state struct {
	a       *domain.Attempt
	eng     *rules.Engine
	seq     rules.SeqState
	text    bool
	banner  bool
	ended   bool
	stopReq bool
	result  string // UNIT_RESULT
	failed  bool   // the unit failed (non-zero exit or failed result)

	best       *pending            // the root cause so far
	side       map[string]*pending // side findings by id
	sideOrder  []string
	ring       []domain.Evidence
	ctxAfter   int
	lastErrors []domain.Evidence
	endLine    *domain.Evidence
	first      string            // cursor of the attempt's first entry
	early      []earlyLine       // lines before the engine was known
	readyEv    []domain.Evidence // readiness lines and the boot-shape lines around them
	also       []domain.Evidence // lines of root causes that lost to the verdict
	seq0       int               // creation order
	skipUntil  time.Time         // resumed: entries up to this time were read before
}

// pending is a finding before the attempt ends (its note is rendered at
// the end, with the final shape).
type pending struct {
	rule     *rules.Rule
	phase    domain.Phase
	time     time.Time
	captures map[string]string
	line     string
	evidence []domain.Evidence
	text     string // the decisive line as the rules saw it
	lineNo   int    // the attempt's line count at the decisive line
}

// New returns a tracker that judges attempts with set.
func New(set *rules.Set, opt Options) *Tracker {
	if opt.SurvivableWindow == 0 {
		opt.SurvivableWindow = 30 * time.Minute
	}
	if opt.ContextBefore == 0 {
		opt.ContextBefore = 8
	}
	if opt.ContextAfter == 0 {
		opt.ContextAfter = 6
	}
	return &Tracker{rules: set, opt: opt,
		byKey: map[string]*state{}, lastByUnit: map[string]*state{}, byContainer: map[string]*state{},
		byName: map[string]*state{}, engineUnits: map[string]bool{}, textCurrent: map[string]*state{},
		nextRestarts: map[string]restart{}, zones: map[string]*time.Location{},
		resumable: map[string]*domain.Attempt{}, resumableCID: map[string]string{}, knownZones: map[string]*time.Location{}}
}

// SetRules swaps the rule set; attempts in progress keep their findings.
func (t *Tracker) SetRules(set *rules.Set) { t.rules = set }

func attemptID(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:8])
}

func (t *Tracker) newState(host, unit, inv string, at time.Time) *state {
	a := &domain.Attempt{Host: host, Unit: unit, InvocationID: inv, StartedAt: at,
		Phase: domain.PhaseStart, Verdict: domain.VerdictRunning, Shape: domain.Shape{}}
	a.Timeline = []domain.PhaseMark{{Phase: domain.PhaseStart, Time: at}}
	st := &state{a: a, seq: rules.SeqState{}, side: map[string]*pending{}, seq0: len(t.attempts)}
	t.attempts = append(t.attempts, st)
	return st
}

// journalAttempt returns the attempt of host|unit|inv, creating it (and
// ending the unit's previous attempt as replaced) when it is new.
func (t *Tracker) journalAttempt(host, unit, inv string, at time.Time) *state {
	key := host + "|" + unit + "|" + inv
	if st, ok := t.byKey[key]; ok {
		return st
	}
	if st := t.continueResumed(key, at); st != nil {
		return st
	}
	uk := host + "|" + unit
	t.replaceResumed(uk, at)
	if prev := t.lastByUnit[uk]; prev != nil && !prev.ended {
		t.end(prev, at, domain.EndedByReplaced)
	}
	st := t.newState(host, unit, inv, at)
	st.a.ID = attemptID(host, unit, inv)
	if r, ok := t.nextRestarts[uk]; ok {
		st.a.RestartCounter = intp(r.n)
		st.first = r.cursor // a restarted follower must see the restart record too
		delete(t.nextRestarts, uk)
	}
	t.byKey[key] = st
	t.lastByUnit[uk] = st
	if g := t.pendingGap; g != nil {
		t.pendingGap = nil
		t.sideFinding(st, domain.FindingLogLoss, *g, g.Field(GapField))
	}
	return st
}

func intp(n int) *int { return &n }

// Add feeds one entry.
func (t *Tracker) Add(e domain.Entry) {
	if e.Identifier == "analyzer" {
		return // our own root-cause notes are not engine output
	}
	if gap := e.Field(GapField); gap != "" {
		t.gap(e, gap)
		return
	}
	if e.Unit == "" && e.InvocationID == "" && e.Field("UNIT") == "" && e.Field("CONTAINER_ID_FULL") == "" &&
		e.Field("CONTAINER_NAME") == "" && e.Field("_TRANSPORT") == "" {
		t.addText(e)
		return
	}
	host := e.Host
	if e.Field("MESSAGE_ID") == msgSuppressed {
		t.suppressed(e)
		return
	}
	if unit := e.Field("UNIT"); unit != "" && (e.PID == 1 || e.Identifier == "systemd") {
		t.lifecycle(e, host, unit)
		return
	}
	if ev := e.Field("PODMAN_EVENT"); ev != "" {
		t.podmanEvent(e, host, ev)
		return
	}
	var st *state
	if cid := e.Field("CONTAINER_ID_FULL"); cid != "" {
		st = t.byContainer[cid]
		if a := t.resumable[t.resumableCID[cid]]; st == nil && a != nil {
			st = t.journalAttempt(a.Host, a.Unit, a.InvocationID, e.Time)
		}
	}
	if st == nil && e.Field("CONTAINER_NAME") != "" {
		st = t.byName[host+"|"+e.Field("CONTAINER_NAME")]
		if st != nil && e.Field("CONTAINER_ID_FULL") != "" && st.a.ContainerID == "" {
			st.a.ContainerID = e.Field("CONTAINER_ID_FULL")
			t.byContainer[st.a.ContainerID] = st
		}
	}
	if st == nil && (e.Field("CONTAINER_ID_FULL") != "" || e.Field("CONTAINER_NAME") != "") {
		// A container no unit claimed (docker run, podman without events):
		// the container itself is the attempt.
		cid := e.Field("CONTAINER_ID_FULL")
		if cid == "" {
			cid = e.Field("CONTAINER_ID")
		}
		name := e.Field("CONTAINER_NAME")
		st = t.byContainer[cid]
		if st == nil {
			st = t.newState(host, name, "", e.Time)
			st.a.ID = attemptID(host, "container", cid, name)
			st.a.Container, st.a.ContainerID = name, cid
			if cid != "" {
				t.byContainer[cid] = st
			}
			t.byName[host+"|"+name] = st
		}
	}
	if st == nil && e.InvocationID != "" && e.Unit != "" {
		st = t.journalAttempt(host, e.Unit, e.InvocationID, e.Time)
	}
	if st == nil && e.Unit != "" {
		st = t.lastByUnit[host+"|"+e.Unit]
		if st == nil {
			st = t.journalAttempt(host, e.Unit, "", e.Time)
		}
	}
	if st == nil || st.reread(e) {
		return
	}
	st.touch(e)
	t.engineOutput(st, e)
}

// gap records a hole in the journal on every open journal attempt and on
// the next one to start (which may have begun inside the hole).
func (t *Tracker) gap(e domain.Entry, what string) {
	for _, st := range t.attempts {
		if !st.ended && !st.text {
			t.sideFinding(st, domain.FindingLogLoss, e, what)
		}
	}
	t.pendingGap = &e
}

// learnZone records the UTC offset of a journal host from the first line
// that states its local time (domain.ZoneOf).
func (t *Tracker) learnZone(host, line string, at time.Time) {
	if host == "" || at.IsZero() {
		return
	}
	if _, ok := t.zones[host]; ok {
		return
	}
	if loc, ok := domain.ZoneOf(line, at); ok {
		t.zones[host] = loc
	}
}

// touch notes the first entry of an attempt (where a restarted follower
// must re-read from to rebuild it).
func (st *state) touch(e domain.Entry) {
	if st.first == "" {
		st.first = e.Cursor
	}
}

// addText handles plain-text engine output: segment on start banners.
func (t *Tracker) addText(e domain.Entry) {
	for _, line := range splitLines(e.Message) {
		st := t.textCurrent[e.Source]
		clean := stripCompose(stripColour(line))
		if _, ok := t.rules.Banner(clean); ok {
			// A banner opens a new attempt once the current one has failed
			// or moved past its start (one start may print several).
			if st != nil && st.banner && (st.best != nil || st.a.Phase.Rank() > domain.PhaseArgs.Rank()) {
				t.end(st, e.Time, "")
				st = nil
			}
			if st == nil {
				st = t.newTextState(e)
			}
			st.banner = true
		}
		if st == nil {
			st = t.newTextState(e)
		}
		t.line(st, e, line)
	}
}

func (t *Tracker) newTextState(e domain.Entry) *state {
	st := t.newState("", "", "", e.Time)
	st.touch(e)
	st.text = true
	st.a.ID = attemptID("text", e.Source, e.Cursor)
	t.textCurrent[e.Source] = st
	return st
}

func (t *Tracker) suppressed(e domain.Entry) {
	m := regexp.MustCompile(`from (\S+?)\.?$`).FindStringSubmatch(strings.TrimSpace(e.Message))
	unit := e.Field("OBJECT_SYSTEMD_UNIT")
	if unit == "" && m != nil {
		unit = m[1]
	}
	if st := t.lastByUnit[e.Host+"|"+unit]; st != nil {
		t.sideFinding(st, domain.FindingLogLoss, e, e.Message)
	}
}

// lifecycle handles PID 1's records about a unit.
func (t *Tracker) lifecycle(e domain.Entry, host, unit string) {
	inv := e.Field("INVOCATION_ID")
	uk := host + "|" + unit
	var st *state
	if inv != "" {
		if s, ok := t.byKey[uk+"|"+inv]; ok {
			st = s
		} else if _, ok := t.resumable[uk+"|"+inv]; ok {
			st = t.journalAttempt(host, unit, inv, e.Time)
		}
	} else {
		st = t.lastByUnit[uk]
	}
	msgID := e.Field("MESSAGE_ID")
	switch msgID {
	case msgUnitStarting, msgUnitStarted:
		if inv != "" && e.Field("JOB_TYPE") != "stop" {
			st = t.journalAttempt(host, unit, inv, e.Time)
			st.touch(e)
		}
		return
	case msgUnitRestart:
		if n, err := strconv.Atoi(e.Field("N_RESTARTS")); err == nil {
			t.nextRestarts[uk] = restart{n, e.Cursor}
			if st != nil {
				st.a.RestartCounterAfter = intp(n)
			}
		}
		return
	}
	if st == nil || st.ended || st.reread(e) {
		return
	}
	ev := domain.Evidence{Time: e.Time, Cursor: e.Cursor, Message: firstLine(e.Message)}
	switch msgID {
	case msgUnitStopping:
		st.stopReq = true
		st.a.StopRequested = true
	case msgUnitExited:
		st.a.ExitCode = e.Field("EXIT_CODE")
		if n, err := strconv.Atoi(e.Field("EXIT_STATUS")); err == nil {
			st.a.ExitStatus = intp(n)
		} else if sig := signalNumber(e.Field("EXIT_STATUS")); sig > 0 {
			st.a.ExitStatus = intp(sig)
		}
		if st.a.ExitStatus != nil && *st.a.ExitStatus != 0 && !st.stopReq {
			st.failed = true
		}
		st.endLine = &ev
	case msgUnitFailed:
		st.result = e.Field("UNIT_RESULT")
		if !st.stopReq || st.result == "timeout" {
			st.failed = true
		}
		st.endLine = &ev
		t.end(st, e.Time, t.endedBy(st))
	case msgUnitFailedStart:
		st.failed = true
		st.endLine = &ev
		t.end(st, e.Time, t.endedBy(st))
	case msgUnitSuccess:
		if st.a.ExitStatus == nil && !st.stopReq {
			st.a.ExitStatus = intp(0)
		}
		st.endLine = &ev
		t.end(st, e.Time, t.endedBy(st))
	case msgUnitStopped:
		if e.Field("JOB_TYPE") == "stop" || st.stopReq {
			st.endLine = &ev
			t.end(st, e.Time, domain.EndedByStop)
		}
	}
}

func (t *Tracker) endedBy(st *state) string {
	if st.stopReq {
		return domain.EndedByStop
	}
	return domain.EndedByExit
}

var signals = map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "SEGV": 11, "PIPE": 13, "TERM": 15}

func signalNumber(s string) int { return signals[strings.TrimPrefix(s, "SIG")] }

// podmanEvent maps a container to the unit that started it.
func (t *Tracker) podmanEvent(e domain.Entry, host, ev string) {
	if e.InvocationID == "" || e.Unit == "" {
		return
	}
	st := t.journalAttempt(host, e.Unit, e.InvocationID, e.Time)
	if st.reread(e) {
		return
	}
	st.touch(e)
	name := e.Field("PODMAN_NAME")
	switch ev {
	case "create", "init", "start":
		if name != "" {
			st.a.Container = name
			t.byName[host+"|"+name] = st
		}
		if id := e.Field("PODMAN_ID"); id != "" {
			st.a.ContainerID = id
			t.byContainer[id] = st
		}
	}
}

func (t *Tracker) engineOutput(st *state, e domain.Entry) {
	if reason := e.Field(LogLossField); reason != "" {
		t.sideFinding(st, domain.FindingLogLoss, e, reason+": "+truncate(e.Message, 300))
	}
	for _, line := range splitLines(e.Message) {
		t.line(st, e, line)
	}
}

// composePrefix is docker compose's "service-1  | " in front of each line.
var composePrefix = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*\s+\| ?`)

func stripCompose(line string) string {
	if strings.IndexByte(line, '|') < 0 {
		return line // no regex for the lines that cannot have the prefix
	}
	if loc := composePrefix.FindStringIndex(line); loc != nil {
		return line[loc[1]:]
	}
	return line
}

// errorWords make a line look like an error (for unknown failures); plain
// substring tests, since this runs on every line.
var errorWords = []string{"Error", "ERROR", "error", "Exception", "Traceback", "FATAL", "Fatal", "fatal",
	"FAILED", "Failed", "failed", "panic", "Abort", "abort", "Killed", "killed", "out of memory"}

// looksLikeError reports whether s contains one of errorWords, in one pass:
// at each byte only the words starting with that byte are compared (17
// strings.Contains scans per line were a tenth of the tracker's time).
func looksLikeError(s string) bool {
	for i := 0; i < len(s); i++ {
		for _, w := range errorWordsByFirst[s[i]] {
			if strings.HasPrefix(s[i:], w) {
				return true
			}
		}
	}
	return false
}

// errorWordsByFirst indexes errorWords by their first byte.
var errorWordsByFirst = func() (m [256][]string) {
	for _, w := range errorWords {
		m[w[0]] = append(m[w[0]], w)
	}
	return m
}()

// colourRemnant is an ANSI colour code whose ESC byte was lost in a paste
// ("[1;36m"); at least one digit, so "[multiproc_executor.py:523]" stays.
var colourRemnant = regexp.MustCompile(`\[[0-9]{1,3}(?:;[0-9]{1,3})*m`)

// stripColour removes colour remnants; the regex runs only on lines with
// a '[' followed by a digit.
func stripColour(line string) string {
	for i := 0; ; {
		j := strings.IndexByte(line[i:], '[')
		if j < 0 {
			return line
		}
		i += j + 1
		if i < len(line) && line[i] >= '0' && line[i] <= '9' {
			return colourRemnant.ReplaceAllString(line, "")
		}
	}
}

// earlyLines caps the lines kept to be judged again once the engine is
// known (lines before the first identifying one).
const earlyLines = 300

// line processes one line of engine output for an attempt.
func (t *Tracker) line(st *state, e domain.Entry, raw string) {
	a := st.a
	a.Lines++
	line := stripCompose(stripColour(raw))
	ev := domain.Evidence{Time: e.Time, Cursor: e.Cursor, Message: strings.TrimSpace(line)}
	if st.ctxAfter > 0 {
		a.Context = append(a.Context, ev)
		st.ctxAfter--
	}
	st.ring = append(st.ring, ev)
	if len(st.ring) > t.opt.ContextBefore {
		st.ring = st.ring[1:]
	}
	// Detect until the engine and its version are known (and, for an engine
	// a wrapper may embed, for as long as the wrapper may still show).
	detect := a.Engine == "" || a.EngineVersion == "" || st.eng.HasChildren()
	l := &t.scan
	t.rules.Prepare(l, line)
	if name, version, ok := t.detect(l, detect); ok {
		switch {
		case a.Engine == "":
			t.setEngine(st, name, version)
			// Judge the lines seen before the engine was known again, now
			// with its phases and shape.
			early := st.early
			st.early = nil
			st.best, st.also = nil, nil
			st.seq = rules.SeqState{} // the early lines are counted again below
			for _, el := range early {
				t.judgeLine(st, el.ev, t.rules.NewLine(el.line))
			}
		case name != a.Engine && st.eng.Parent() == "" && t.rules.Engine(name).Parent() == a.Engine:
			// A wrapper shows itself after the engine it embeds (Ollama
			// after llama-server's first lines).
			t.setEngine(st, name, version)
		case a.EngineVersion == "" && name == a.Engine:
			a.EngineVersion = version
		}
	}
	if a.Engine == "" && len(st.early) < earlyLines {
		st.early = append(st.early, earlyLine{ev, line})
	}
	t.judgeLine(st, ev, l)
}

func (t *Tracker) detect(l *rules.Line, wanted bool) (name, version string, ok bool) {
	if !wanted {
		return "", "", false
	}
	return t.rules.DetectLine(l)
}

type earlyLine struct {
	ev   domain.Evidence
	line string
}

func (t *Tracker) setEngine(st *state, name, version string) {
	a := st.a
	a.Engine = name
	if version != "" {
		a.EngineVersion = version
	}
	st.eng = t.rules.Engine(name)
	if a.Unit != "" {
		t.engineUnits[a.Host+"|"+a.Unit] = true
	}
}

// judgeLine moves the phase, updates the shape and runs the rules on one
// line (phase markers first: a line can be both the phase's marker and the
// decisive line). It strips l in place.
func (t *Tracker) judgeLine(st *state, ev domain.Evidence, l *rules.Line) {
	a := st.a
	t.learnZone(a.Host, l.Text, ev.Time)
	st.eng.StripLine(l)
	text := l.Text
	if looksLikeError(text) {
		st.lastErrors = append(st.lastErrors, ev)
		if len(st.lastErrors) > 5 {
			st.lastErrors = st.lastErrors[1:]
		}
	}
	if p, fwd, ok := st.eng.PhaseLine(l, !a.ReadyAt.IsZero()); ok {
		if p == domain.PhaseReady {
			st.addReadyEvidence(ev)
		}
		if t.setPhase(st, p, fwd, ev) && fwd {
			t.reconsider(st)
		}
	}
	if st.eng.IsReadyEvidenceLine(l) {
		st.addReadyEvidence(ev)
	}
	st.eng.UpdateShapeLine(l, a.Shape)
	env := &t.env
	*env = rules.LineEnv{Line: text, Phase: string(a.Phase), Engine: a.Engine, Unit: a.Unit,
		ReachedReady: !a.ReadyAt.IsZero(), Shape: a.Shape, Time: ev.Time}
	for _, h := range t.rules.MatchPrepared(l, env, st.seq) {
		t.hit(st, h, ev, text)
	}
}

// setPhase moves the attempt into p; it reports whether the phase changed.
func (t *Tracker) setPhase(st *state, p domain.Phase, forwardOnly bool, ev domain.Evidence) bool {
	a := st.a
	at := ev.Time
	if p == a.Phase || (forwardOnly && p.Rank() <= a.Phase.Rank()) {
		return false
	}
	a.Phase = p
	a.Timeline = append(a.Timeline, domain.PhaseMark{Phase: p, Time: at, Cursor: ev.Cursor, Message: ev.Message})
	if b := st.best; b != nil && b.rule.Provisional && p.Rank() > b.phase.Rank() {
		// The engine moved on: the stall the verdict named is over.
		st.best, a.Context = nil, nil
	}
	if p == domain.PhaseReady && a.ReadyAt.IsZero() {
		a.ReadyAt = at
		if at.IsZero() {
			a.ReadyAt = time.Unix(0, 1) // plain text without times: still "reached"
		}
	}
	return true
}

// reconsiderWindow is how many lines after the decisive line a traceback
// frame may still tell where the engine was (vLLM logs the exception first
// and its traceback after it).
const reconsiderWindow = 400

// reconsider re-judges the decisive line when a traceback frame arriving
// shortly after it moved the phase forward (e.g. "in capture_model" below a
// bare OOM line): the phase-dependent rules then pick the right verdict. The
// rule that fired keeps the verdict if it still holds in the new phase.
func (t *Tracker) reconsider(st *state) {
	b := st.best
	if b == nil || st.a.Lines-b.lineNo > reconsiderWindow || st.a.Phase.Rank() <= b.phase.Rank() {
		return
	}
	env := &rules.LineEnv{Line: b.text, Phase: string(st.a.Phase), Engine: st.a.Engine, Unit: st.a.Unit,
		ReachedReady: !st.a.ReadyAt.IsZero(), Shape: st.a.Shape}
	var pick *rules.Hit
	for _, h := range t.rules.MatchLine(env, rules.SeqState{}) {
		h := h
		if !h.Rule.IsRootCause() {
			continue
		}
		if h.Rule == b.rule {
			pick = &h
			break
		}
		if pick == nil || h.Rule.Priority > pick.Rule.Priority {
			pick = &h
		}
	}
	if pick == nil {
		return
	}
	b.rule, b.captures = pick.Rule, pick.Captures
	b.phase = phaseFor(pick.Rule, st.a.Phase)
}

// phaseFor is the phase a rule's finding is in when it fires in phase cur.
func phaseFor(r *rules.Rule, cur domain.Phase) domain.Phase {
	switch {
	case r.Phase != "":
		return r.Phase
	case r.Floor != "" && r.Floor.Rank() > cur.Rank():
		return r.Floor
	}
	return cur
}

const maxEvidencePerFinding = 4

// hit records a rule firing.
func (t *Tracker) hit(st *state, h rules.Hit, ev domain.Evidence, text string) {
	r := h.Rule
	phase := phaseFor(r, st.a.Phase)
	if !r.IsRootCause() {
		t.addSide(st, r, phase, h.Captures, ev)
		return
	}
	if b := st.best; b != nil {
		if b.rule.FindingID() == r.FindingID() {
			if len(b.evidence) < maxEvidencePerFinding {
				b.evidence = append(b.evidence, ev)
			}
			return
		}
		if r.Priority <= b.rule.Priority {
			st.addAlso(ev)
			return
		}
		st.addAlso(b.evidence...)
	}
	st.best = &pending{rule: r, phase: phase, time: ev.Time, captures: h.Captures, line: snippet(text, h.At),
		evidence: []domain.Evidence{ev}, text: text, lineNo: st.a.Lines}
	st.a.Context = append([]domain.Evidence{}, st.ring...)
	st.ctxAfter = t.opt.ContextAfter
}

// addReadyEvidence keeps the latest readiness and boot-shape lines.
func (st *state) addReadyEvidence(ev domain.Evidence) {
	st.readyEv = append(st.readyEv, ev)
	if len(st.readyEv) > 6 {
		st.readyEv = st.readyEv[1:]
	}
}

// addAlso keeps lines of root causes that did not win: they support the
// verdict (llama.cpp prints its allocation error, then "error loading model").
func (st *state) addAlso(evs ...domain.Evidence) {
	for _, ev := range evs {
		if len(st.also) < 2*maxEvidencePerFinding {
			st.also = append(st.also, ev)
		}
	}
}

func (t *Tracker) addSide(st *state, r *rules.Rule, phase domain.Phase, caps map[string]string, ev domain.Evidence) {
	id := r.FindingID()
	if p, ok := st.side[id]; ok {
		if len(p.evidence) < maxEvidencePerFinding {
			p.evidence = append(p.evidence, ev)
		}
		return
	}
	st.side[id] = &pending{rule: r, phase: phase, time: ev.Time, captures: caps, line: ev.Message,
		evidence: []domain.Evidence{ev}}
	st.sideOrder = append(st.sideOrder, id)
}

// sideFinding records a finding raised by the tracker itself (log loss),
// with the rule of that id when the set has one.
func (t *Tracker) sideFinding(st *state, id string, e domain.Entry, msg string) {
	ev := domain.Evidence{Time: e.Time, Cursor: e.Cursor, Message: msg}
	r := t.findingRule(id)
	t.addSide(st, r, st.a.Phase, nil, ev)
}

// findingRule returns the first rule that sets finding id, or a bare rule.
func (t *Tracker) findingRule(id string) *rules.Rule {
	for _, r := range t.rules.Rules() {
		if r.FindingID() == id {
			return r
		}
	}
	return &rules.Rule{ID: "analyzer." + id, Finding: id, Severity: domain.SeverityWarning, MessageID: messageIDLogLoss}
}

// end closes an attempt: it decides the verdict and evaluates end rules.
func (t *Tracker) end(st *state, at time.Time, by string) {
	if st.ended {
		return
	}
	st.ended = true
	st.a.EndedAt = at
	st.a.EndedBy = by
	if st.text && st.a.EndedBy == "" {
		st.a.EndedAt = time.Time{}
	}
}

// Attempts returns every attempt seen so far, judged as of now, in start
// order. Attempts that are still running are judged as running (their
// verdict may change with more input). Units never seen running an engine
// are left out.
func (t *Tracker) Attempts() []*domain.Attempt {
	out := make([]*domain.Attempt, 0, len(t.attempts))
	states := append([]*state(nil), t.attempts...)
	sort.SliceStable(states, func(i, j int) bool {
		ai, aj := states[i].a.StartedAt, states[j].a.StartedAt
		if ai.Equal(aj) {
			return states[i].seq0 < states[j].seq0
		}
		return ai.Before(aj)
	})
	for _, st := range states {
		if !st.text && st.a.Engine == "" && !t.engineUnits[st.a.Host+"|"+st.a.Unit] {
			continue
		}
		loc := t.zones[st.a.Host]
		if loc == nil {
			loc = t.knownZones[st.a.Host]
		}
		out = append(out, t.judge(st).In(loc))
	}
	return out
}

// judge computes the attempt's verdict, phase, findings, notes and evidence
// from its state. It does not change the state, so it can run repeatedly.
func (t *Tracker) judge(st *state) *domain.Attempt {
	a := *st.a
	a.Shape = domain.Shape{}
	for k, v := range st.a.Shape {
		a.Shape[k] = v
	}
	st.eng.ApplyDefaults(a.Shape)
	a.Findings = nil
	a.Evidence = nil
	a.Note, a.Rule = "", ""
	reached := !a.ReadyAt.IsZero()
	var failedAt time.Time
	switch {
	case st.best != nil:
		a.Verdict = st.best.rule.Verdict
		a.Phase = st.best.phase
		a.Rule = st.best.rule.ID
		failedAt = st.best.time
	case st.result == "timeout":
		a.Verdict = domain.VerdictTimeout
	case st.failed || (st.ended && a.EndedBy == domain.EndedByExit && !reached):
		a.Verdict = domain.VerdictUnknownFailure
		if st.endLine != nil {
			failedAt = st.endLine.Time
		}
	case reached || (st.text && a.Phase == domain.PhaseWarmup):
		// A plain-text excerpt that ends after the engine's last boot step
		// (warmup) with no failure booted; its readiness line is often cut.
		a.Verdict = domain.VerdictReady
		a.Phase = domain.PhaseReady
		a.Evidence = append(a.Evidence, milestones(st.a.Timeline, domain.PhaseWarmup, domain.PhaseReady)...)
		a.Evidence = append(a.Evidence, st.readyEv...)
	case st.ended && a.EndedBy == domain.EndedByStop:
		a.Verdict = domain.VerdictStopped
	default:
		a.Verdict = domain.VerdictRunning
		// Where the boot has got to: its boot-shape lines so far (KV cache
		// size, concurrency). Stored, they also let a later replay that
		// continues the attempt quote them once it is ready.
		a.Evidence = append(a.Evidence, st.readyEv...)
	}
	if a.Verdict == domain.VerdictUnknownFailure {
		a.Evidence = append(a.Evidence, st.lastErrors...)
		if st.endLine != nil {
			a.Evidence = append(a.Evidence, *st.endLine)
		}
		a.Fingerprint = fingerprint(st.lastErrors)
		a.Note = unknownNote(&a, st)
		a.Rule = "analyzer.unknown_failure"
		a.Findings = append(a.Findings, domain.Finding{ID: string(domain.VerdictUnknownFailure), Rule: a.Rule,
			Severity: domain.SeverityError, MessageID: messageIDUnknownFailure, Phase: a.Phase, Time: failedAt,
			Note: a.Note, Evidence: a.Evidence})
	}
	data := func(p *pending) rules.NoteData {
		return rules.NoteData{Rule: p.rule.ID, Verdict: string(a.Verdict), Phase: string(p.phase), Engine: a.Engine,
			Unit: a.Unit, Captures: p.captures, Shape: a.Shape, Line: p.line}
	}
	if b := st.best; b != nil {
		note := b.rule.RenderNote(data(b))
		if !strings.Contains(note, b.line) {
			note += " Decisive line: \"" + b.line + "\""
		}
		a.Note = note
		a.Findings = append(a.Findings, finding(b, note))
		a.Evidence = append(a.Evidence, b.evidence...)
		a.Evidence = append(a.Evidence, st.also...)
	}
	for _, id := range st.sideOrder {
		p := st.side[id]
		f := finding(p, p.rule.RenderNote(data(p)))
		a.Findings = append(a.Findings, f)
		a.Evidence = append(a.Evidence, p.evidence...)
	}
	// End rules see the attempt as it ended (or stands, while running).
	env := &rules.EndEnv{Verdict: string(a.Verdict), Phase: string(a.Phase), Failed: a.Verdict.IsFailure(),
		Engine: a.Engine, Unit: a.Unit, EndedBy: a.EndedBy, ExitCode: a.ExitCode, ReachedReady: reached,
		SecondsReadyToFailure: -1, SurvivableSeconds: t.opt.SurvivableWindow.Seconds(), Findings: a.FindingIDs(), Shape: a.Shape}
	if a.ExitStatus != nil {
		env.ExitStatus, env.HasExit = *a.ExitStatus, true
	}
	if a.RestartCounterAfter != nil {
		env.RestartCounterAfter = *a.RestartCounterAfter
	}
	if reached && !failedAt.IsZero() && a.Verdict.IsFailure() {
		env.SecondsReadyToFailure = failedAt.Sub(a.ReadyAt).Seconds()
	}
	for _, r := range t.rules.MatchEnd(env) {
		if a.HasFinding(r.FindingID()) {
			continue
		}
		p := &pending{rule: r, phase: a.Phase, time: a.EndedAt, captures: rules.EndCaptures(env)}
		if st.endLine != nil {
			p.evidence = []domain.Evidence{*st.endLine}
			p.line = st.endLine.Message
			p.time = st.endLine.Time
		}
		a.Findings = append(a.Findings, finding(p, r.RenderNote(data(p))))
		a.Evidence = append(a.Evidence, p.evidence...)
		env.Findings = append(env.Findings, r.FindingID())
	}
	a.Evidence = dedupeEvidence(a.Evidence)
	if !a.ReadyAt.IsZero() && a.ReadyAt.Equal(time.Unix(0, 1)) {
		a.ReadyAt = time.Time{}
	}
	return &a
}

// milestones returns the lines that moved the attempt into the given phases.
func milestones(tl []domain.PhaseMark, phases ...domain.Phase) []domain.Evidence {
	var out []domain.Evidence
	for _, m := range tl {
		for _, p := range phases {
			if m.Phase == p && m.Message != "" {
				out = append(out, domain.Evidence{Time: m.Time, Cursor: m.Cursor, Message: m.Message})
			}
		}
	}
	return out
}

func finding(p *pending, note string) domain.Finding {
	return domain.Finding{ID: p.rule.FindingID(), Rule: p.rule.ID, Severity: p.rule.Severity,
		MessageID: p.rule.MessageID, Phase: p.phase, Time: p.time, Note: note, Captures: p.captures,
		Evidence: p.evidence}
}

func dedupeEvidence(in []domain.Evidence) []domain.Evidence {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, e := range in {
		k := e.Cursor + "\x00" + e.Message
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// ReplayCursor returns the cursor of the first entry of the oldest journal
// attempt that has not ended ("" when none is open). A follower that
// restarts re-reads from there to rebuild those attempts exactly.
func (t *Tracker) ReplayCursor() string {
	var oldest *state
	for _, st := range t.attempts {
		if st.ended || st.text || st.first == "" {
			continue
		}
		if oldest == nil || st.seq0 < oldest.seq0 {
			oldest = st
		}
	}
	if oldest == nil {
		return ""
	}
	return oldest.first
}

// Prune forgets attempts that ended before cutoff (they are judged and
// stored); the latest attempt of each unit is kept, since a restart counter
// or a late systemd record may still refer to it. It returns how many were
// dropped. A long-running follower calls it to bound its memory.
func (t *Tracker) Prune(cutoff time.Time) int {
	keep := t.attempts[:0]
	dropped := 0
	for _, st := range t.attempts {
		a := st.a
		latest := t.lastByUnit[a.Host+"|"+a.Unit] == st
		if st.ended && !latest && !a.EndedAt.IsZero() && a.EndedAt.Before(cutoff) {
			dropped++
			delete(t.byKey, a.Host+"|"+a.Unit+"|"+a.InvocationID)
			if a.ContainerID != "" && t.byContainer[a.ContainerID] == st {
				delete(t.byContainer, a.ContainerID)
			}
			if t.byName[a.Host+"|"+a.Container] == st {
				delete(t.byName, a.Host+"|"+a.Container)
			}
			continue
		}
		keep = append(keep, st)
	}
	for i := len(keep); i < len(t.attempts); i++ {
		t.attempts[i] = nil
	}
	t.attempts = keep
	return dropped
}

// Finish ends every attempt still open as of the end of the input: journal
// attempts stay running (no end was seen); plain-text attempts end with
// the text.
func (t *Tracker) Finish() {
	for _, st := range t.attempts {
		if st.text && !st.ended {
			st.ended = true
		}
	}
}

func splitLines(msg string) []string {
	if !strings.Contains(msg, "\n") {
		if strings.TrimSpace(msg) == "" {
			return nil
		}
		return []string{msg}
	}
	var out []string
	for _, l := range strings.Split(msg, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// snippet is the part of a long line around offset at (a reassembled
// 16 KiB traceback line holds its decisive words in the middle).
func snippet(line string, at int) string {
	const before, after = 60, 240
	if len(line) <= before+after {
		return line
	}
	start, end := at-before, at+after
	if start < 0 {
		start, end = 0, before+after
	}
	if end > len(line) {
		start, end = len(line)-before-after, len(line)
	}
	for start > 0 && !utf8.RuneStart(line[start]) {
		start--
	}
	for end < len(line) && !utf8.RuneStart(line[end]) {
		end++
	}
	out := line[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(line) {
		out += "…"
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
