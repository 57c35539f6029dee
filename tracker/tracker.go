// Package tracker cuts a stream of normalized journal entries into boot
// attempts and has each attempt's lines judged (phase, shape, findings,
// verdict) by its own judge.Judge with a rule set. It is the core between
// ingest (entries in) and store/web (attempts out); it does no I/O.
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
	"iter"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/judge"
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

// LogLossField marks an entry that ingest could not reassemble; its value
// says why (ingest.FieldLogLoss; the tracker does not import ingest).
const LogLossField = "ANALYZER_LOG_LOSS"

// PastedField marks a unit lifecycle record read back from pasted
// journalctl output (ingest.FieldPasted).
const PastedField = "ANALYZER_PASTED"

// GapField marks a synthetic entry a journal follower sends when part of
// the journal is gone (a vacuumed cursor); its value says what was lost.
// Every attempt open at that point, and the next one to start, get a
// log_loss finding.
const GapField = "ANALYZER_JOURNAL_GAP"

// Options tune the tracker's judges (judge.Options; zero values take
// the defaults).
type Options = judge.Options

// Tracker holds the attempts seen so far. It is not safe for concurrent use.
type Tracker struct {
	rules *rules.Set
	opt   Options
	scan  rules.Line // every judge's line buffer (judge.ShareScratch)

	fields entryFields // of the last entry's Fields map

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
	// pastedUnits are units whose lifecycle came from pasted journalctl
	// output: the operator chose to show them, so they are attempts even
	// without engine lines, when no unit of the input has any.
	pastedUnits map[string]bool
	// created counts the attempts ever made: their start-order tiebreak,
	// which must not repeat after Prune or Drain forgot some.
	created int
	// clock is the last change version given to an attempt
	// (domain.Attempt.Version): one counter for all, so a version never
	// repeats, even for an attempt forgotten and made again.
	clock uint64
}

// restart is a "Scheduled restart job" record: its N_RESTARTS and cursor.
type restart struct {
	n      int
	cursor string
}

// state is the tracker's working copy of one attempt: its identity and
// lifecycle; the judge holds what its lines say.
type state struct {
	a       *domain.Attempt
	j       *judge.Judge
	text    bool
	banner  bool
	ended   bool
	stopReq bool
	result  string // UNIT_RESULT
	failed  bool   // the unit failed (non-zero exit or failed result)

	endLine   *domain.Evidence
	exitLine  *domain.Evidence  // the main process's exit record
	first     string            // cursor of the attempt's first entry
	seq0      int               // creation order
	skipUntil time.Time         // resumed: entries up to this time were read before
	skipSeq   map[string]uint64 // resumed: journal (cursor s=) → the last entry (i=) the stored attempt holds
	log       logBuf            // the attempt's own lines (Options.KeepLog)
	// notedHost and notedUnit: the host|unit last put in engineUnits.
	notedHost, notedUnit string
	// stalled: the boot_stalled finding stands (Stall).
	stalled bool

	// version is the attempt's change version (domain.Attempt.Version):
	// the tracker's clock at its latest change. judgeV and zone are the
	// judge's Version and the zone its times were shown in when version
	// last took them into account.
	version uint64
	judgeV  uint64
	zone    *time.Location
	// judgedAt is the attempt as judged at version judgedV: judging
	// again before the version moves would give the same.
	judgedAt *domain.Attempt
	judgedV  uint64
}

// changed gives st a new version: something of its attempt the judge does
// not hold (identity, container, lifecycle, exit, restart counters) changed.
func (t *Tracker) changed(st *state) {
	t.clock++
	st.version = t.clock
}

// setContainer sets the attempt's container name and id where given and
// not known yet.
func (t *Tracker) setContainer(st *state, name, id string) {
	if name != "" && st.a.Container == "" {
		st.a.Container = name
		t.changed(st)
	}
	if id != "" && st.a.ContainerID == "" {
		st.a.ContainerID = id
		t.changed(st)
	}
}

// New returns a tracker that judges attempts with set.
func New(set *rules.Set, opt Options) *Tracker {
	return &Tracker{rules: set, opt: opt,
		byKey: map[string]*state{}, lastByUnit: map[string]*state{}, byContainer: map[string]*state{},
		byName: map[string]*state{}, engineUnits: map[string]bool{}, textCurrent: map[string]*state{},
		nextRestarts: map[string]restart{}, zones: map[string]*time.Location{},
		resumable: map[string]*domain.Attempt{}, resumableCID: map[string]string{}, knownZones: map[string]*time.Location{},
		pastedUnits: map[string]bool{}}
}

// newJudge is a judge for a new attempt, sharing t's line buffer: the
// tracker calls one judge at a time.
func (t *Tracker) newJudge() *judge.Judge {
	j := judge.New(t.rules, "", t.opt)
	j.ShareScratch(&t.scan)
	return j
}

// SetRules swaps the rule set; attempts in progress keep their findings.
func (t *Tracker) SetRules(set *rules.Set) {
	t.rules = set
	for _, st := range t.attempts {
		st.j.SetRules(set)
	}
}

func attemptID(parts ...string) string {
	h := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:8])
}

func (t *Tracker) newState(host, unit, inv string, at time.Time) *state {
	a := &domain.Attempt{Host: host, Unit: unit, InvocationID: inv, StartedAt: at,
		Phase: domain.PhaseStart, Verdict: domain.VerdictRunning, Shape: domain.Shape{}}
	st := &state{a: a, j: t.newJudge(), seq0: t.created}
	t.created++
	st.j.Start(at)
	t.changed(st)
	t.attempts = append(t.attempts, st)
	return st
}

// journalAttempt returns the attempt of host|unit|inv for an entry at time
// at with cursor cursor, creating it (and ending the unit's previous
// attempt as replaced) when it is new.
func (t *Tracker) journalAttempt(host, unit, inv string, at time.Time, cursor string) *state {
	key := host + "|" + unit + "|" + inv
	if st, ok := t.byKey[key]; ok {
		return st
	}
	if st := t.continueResumed(key, at, cursor); st != nil {
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
	f := t.fieldsOf(e.Fields)
	if gap := f.gap; gap != "" {
		t.gap(e, gap)
		return
	}
	if e.Unit == "" && e.InvocationID == "" && f.unit == "" && f.containerIDFull == "" &&
		f.containerName == "" && f.transport == "" {
		if !e.Journal {
			t.addText(e)
		}
		return // a journal record of no unit or container: no attempt's
	}
	host := e.Host
	if f.messageID == msgSuppressed {
		t.suppressed(e)
		return
	}
	if unit := f.unit; unit != "" && (e.PID == 1 || e.Identifier == "systemd") {
		if f.pasted != "" {
			t.pastedUnits[host+"|"+unit] = true
		}
		t.lifecycle(e, host, unit)
		return
	}
	if ev := f.podmanEvent; ev != "" {
		t.podmanEvent(e, host, ev)
		return
	}
	var st *state
	if cid := f.containerIDFull; cid != "" {
		st = t.byContainer[cid]
		if a := t.resumable[t.resumableCID[cid]]; st == nil && a != nil {
			st = t.journalAttempt(a.Host, a.Unit, a.InvocationID, e.Time, e.Cursor)
		}
	}
	if st == nil && f.containerName != "" {
		st = t.containerOwner(host, f.containerName, f.containerIDFull)
	}
	if st != nil {
		t.setContainer(st, f.containerName, "")
	}
	if st == nil && (f.containerIDFull != "" || f.containerName != "") {
		// A container no unit claimed (docker run, podman without events):
		// the container itself is the attempt.
		cid := f.containerIDFull
		if cid == "" {
			cid = f.containerID
		}
		name := f.containerName
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
		st = t.journalAttempt(host, e.Unit, e.InvocationID, e.Time, e.Cursor)
	}
	if st == nil && e.Unit != "" {
		st = t.lastByUnit[host+"|"+e.Unit]
		if st == nil {
			st = t.journalAttempt(host, e.Unit, "", e.Time, e.Cursor)
		}
	}
	if st == nil || st.reread(e) {
		return
	}
	if id, ok := containerIDLine(e.Message); ok && f.containerIDFull == "" {
		// `docker run -d` printed the id of the container it started for
		// this unit: its journald log driver records are this attempt's.
		t.setContainer(st, "", id)
		t.byContainer[id] = st
	}
	st.touch(e)
	t.engineOutput(st, e, f.logLoss)
}

// entryFields are the Fields Add reads, looked up once per Fields map:
// the entries of a stream share theirs (domain.Entry.Fields is read-only),
// so most entries cost a pointer comparison instead of ten map lookups.
type entryFields struct {
	m                                           map[string]string
	gap, unit, messageID, pasted                string
	podmanEvent, transport, logLoss             string
	containerIDFull, containerID, containerName string
}

// fieldsOf returns the entryFields of m (held until the next map).
func (t *Tracker) fieldsOf(m map[string]string) *entryFields {
	f := &t.fields
	if m != nil && f.m != nil && reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(f.m).UnsafePointer() {
		return f
	}
	*f = entryFields{m: m, gap: m[GapField], unit: m["UNIT"], messageID: m["MESSAGE_ID"], pasted: m[PastedField],
		podmanEvent: m["PODMAN_EVENT"], transport: m["_TRANSPORT"], logLoss: m[LogLossField],
		containerIDFull: m["CONTAINER_ID_FULL"], containerID: m["CONTAINER_ID"], containerName: m["CONTAINER_NAME"]}
	return f
}

// containerOwner returns the unit attempt a container's records belong to,
// when the container id alone does not tell: the attempt podman's events
// named the container for, or, for docker's journald log driver (records
// under docker.service), the running attempt of the unit named like the
// container (frank.service runs the container frank). An attempt that
// already has another container is not this one's: a new container id is
// a new run.
func (t *Tracker) containerOwner(host, name, cid string) *state {
	owns := func(st *state) bool {
		return st != nil && (cid == "" || st.a.ContainerID == "" || st.a.ContainerID == cid)
	}
	st := t.byName[host+"|"+name]
	if !owns(st) {
		st = nil
		if u := t.lastByUnit[host+"|"+name+".service"]; owns(u) && !u.ended {
			st = u
		}
	}
	if st != nil && cid != "" && st.a.ContainerID == "" {
		t.byContainer[cid] = st
	}
	if st != nil {
		t.setContainer(st, name, cid)
	}
	return st
}

// containerIDLine returns the container id a message is (64 hex digits,
// white space around), as `docker run -d` prints it.
func containerIDLine(msg string) (string, bool) {
	if len(msg) < 64 {
		return "", false
	}
	// Most messages start with a byte that neither a container id nor
	// the white space around one starts with.
	if c := msg[0]; c < utf8.RuneSelf && !isHex(msg[:1]) && !asciiSpace(c) {
		return "", false
	}
	id := strings.TrimSpace(msg)
	return id, len(id) == 64 && isHex(id)
}

// asciiSpace reports whether c is white space to strings.TrimSpace.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
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
// that states its local time (rules.Set.ZoneOf).
func (t *Tracker) learnZone(host, line string, at time.Time) {
	if host == "" || at.IsZero() {
		return
	}
	if _, ok := t.zones[host]; ok {
		return
	}
	if loc, ok := t.rules.ZoneOf(line, at); ok {
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
	for line := range splitLines(e.Message) {
		st := t.textCurrent[e.Source]
		clean := stripRayRepeat(stripCompose(stripColour(line)))
		if _, ok := t.rules.Banner(clean); ok {
			// A banner opens a new attempt once the current one has failed
			// or moved past its start (one start may print several).
			if st != nil && st.banner && (st.j.HasRootCause() || st.j.Phase().Rank() > domain.PhaseInit.Rank()) {
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
	st := t.lastByUnit[e.Host+"|"+unit]
	if st == nil {
		st = t.takeUpResumed(e.Host+"|"+unit, e.Time, e.Cursor)
	}
	if st != nil && !st.reread(e) {
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
			st = t.journalAttempt(host, unit, inv, e.Time, e.Cursor)
		}
	} else {
		st = t.lastByUnit[uk]
	}
	msgID := e.Field("MESSAGE_ID")
	switch msgID {
	case msgUnitStarting, msgUnitStarted:
		if inv != "" && e.Field("JOB_TYPE") != "stop" {
			st = t.journalAttempt(host, unit, inv, e.Time, e.Cursor)
			st.touch(e)
		}
		return
	case msgUnitRestart:
		if n, err := strconv.Atoi(e.Field("N_RESTARTS")); err == nil {
			t.nextRestarts[uk] = restart{n, e.Cursor}
			if st != nil {
				st.a.RestartCounterAfter = intp(n)
				t.changed(st)
			}
		}
		return
	}
	if st == nil || st.ended || st.reread(e) {
		return
	}
	ev := domain.Evidence{Time: e.Time, Cursor: e.Cursor, Message: firstLine(e.Message)}
	switch msgID {
	case msgUnitStopping, msgUnitExited, msgUnitFailed, msgUnitFailedStart, msgUnitSuccess:
		t.changed(st)
	}
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
		st.endLine, st.exitLine = &ev, &ev
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
			t.changed(st)
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
	st := t.journalAttempt(host, e.Unit, e.InvocationID, e.Time, e.Cursor)
	if st.reread(e) {
		return
	}
	st.touch(e)
	name := e.Field("PODMAN_NAME")
	switch ev {
	case "create", "init", "start":
		if name != "" {
			if st.a.Container != name {
				st.a.Container = name
				t.changed(st)
			}
			t.byName[host+"|"+name] = st
		}
		if id := e.Field("PODMAN_ID"); id != "" {
			if st.a.ContainerID != id {
				st.a.ContainerID = id
				t.changed(st)
			}
			t.byContainer[id] = st
		}
	}
}

// engineOutput judges the lines of e; logLoss is its LogLossField.
func (t *Tracker) engineOutput(st *state, e domain.Entry, logLoss string) {
	if logLoss != "" {
		t.sideFinding(st, domain.FindingLogLoss, e, logLoss+": "+truncate(e.Message, 300))
	}
	for line := range splitLines(e.Message) {
		t.line(st, e, line)
	}
}

// stripCompose removes docker compose's "service-1  | " column
// (domain.SplitCompose).
func stripCompose(line string) string {
	_, rest, _ := domain.SplitCompose(line)
	return rest
}

// stripRayRepeat removes the count Ray's log deduplication appends to a
// line its workers printed alike ("... [repeated 7x across cluster]",
// ray/_private/ray_logging log_dedup): the engine's line ends before it.
func stripRayRepeat(line string) string {
	const tail = "x across cluster]"
	if !strings.HasSuffix(line, tail) {
		return line
	}
	i := strings.LastIndex(line, " [repeated ")
	if i < 0 {
		return line
	}
	for _, c := range line[i+len(" [repeated ") : len(line)-len(tail)] {
		if c < '0' || c > '9' {
			return line
		}
	}
	return line[:i]
}

// colourRemnant is an ANSI colour code whose ESC byte was lost in a paste
// ("[1;36m"); at least one digit, so "[multiproc_executor.py:523]" stays.
var colourRemnant = regexp.MustCompile(`\[[0-9]{1,3}(?:;[0-9]{1,3})*m`)

// stripColour removes colour remnants. Lines are searched by hand
// (colourAt at each '['): ReplaceAllString copies a line even when nothing
// matches (a bracketed date on every line of an SGLang log made it 7 % of
// a night journal's allocations), and the regexp's search from each
// '[' and a digit cost ~0.6 % of a night journal's explain, on lines
// that held none.
func stripColour(line string) string {
	for i := 0; ; {
		j := strings.IndexByte(line[i:], '[')
		if j < 0 {
			return line
		}
		i += j
		if colourAt(line[i:]) {
			return colourRemnant.ReplaceAllString(line, "")
		}
		i++
	}
}

// colourAt reports whether s starts with a colour remnant: '[', groups of
// one to three digits joined by ';', then 'm' (colourRemnant anchored).
func colourAt(s string) bool {
	if s == "" || s[0] != '[' {
		return false
	}
	i := 1
	for {
		d := 0
		for i < len(s) && d < 4 && s[i] >= '0' && s[i] <= '9' {
			i, d = i+1, d+1
		}
		if d == 0 || d > 3 || i == len(s) {
			return false
		}
		switch s[i] {
		case 'm':
			return true
		case ';':
			i++
		default:
			return false
		}
	}
}

// line processes one line of engine output for an attempt.
func (t *Tracker) line(st *state, e domain.Entry, raw string) {
	line := stripRayRepeat(stripCompose(stripColour(raw)))
	ev := domain.Evidence{Time: e.Time, Cursor: e.Cursor, Message: strings.TrimSpace(line)}
	t.learnZone(st.a.Host, line, e.Time)
	if t.opt.KeepLog {
		st.log.add(ev)
	}
	st.j.Line(line, ev)
	if st.a.Unit != "" && (st.notedHost != st.a.Host || st.notedUnit != st.a.Unit) && st.j.Engine() != "" {
		t.engineUnits[st.a.Host+"|"+st.a.Unit] = true
		st.notedHost, st.notedUnit = st.a.Host, st.a.Unit
	}
}

// sideFinding records a finding raised by the tracker itself (log loss).
func (t *Tracker) sideFinding(st *state, id string, e domain.Entry, msg string) {
	st.j.Finding(id, domain.Evidence{Time: e.Time, Cursor: e.Cursor, Message: msg})
}

// Stall raises (stalled) or withdraws the boot_stalled finding of the
// open attempt id, with ev as its line (the stall said in words, at the
// time it was seen); an attempt that ended keeps what it had. It reports
// whether the attempt changed.
func (t *Tracker) Stall(id string, stalled bool, ev domain.Evidence) bool {
	for _, st := range t.attempts {
		if st.a.ID != id || st.ended {
			continue
		}
		if stalled == st.stalled {
			return false
		}
		st.stalled = stalled
		if stalled {
			st.j.Finding(domain.FindingBootStalled, ev)
		} else {
			st.j.Withdraw(domain.FindingBootStalled)
		}
		t.changed(st)
		return true
	}
	return false
}

// end closes an attempt: it decides the verdict and evaluates end rules.
func (t *Tracker) end(st *state, at time.Time, by string) {
	if st.ended {
		return
	}
	t.changed(st)
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
// are left out. An attempt whose Version did not move since an earlier
// call is not judged again: the call returns the same *domain.Attempt,
// which callers therefore must not modify.
func (t *Tracker) Attempts() []*domain.Attempt {
	out := make([]*domain.Attempt, 0, len(t.attempts))
	t.Each(func(a *domain.Attempt, _ int) { out = append(out, a) })
	return out
}

// Each calls fn with every attempt Attempts returns, in the same order,
// and its creation number (the order of attempts with the same start
// time; Drain hands over the same number).
func (t *Tracker) Each(fn func(a *domain.Attempt, seq int)) {
	states := append([]*state(nil), t.attempts...)
	sort.SliceStable(states, func(i, j int) bool { return startsBefore(states[i], states[j]) })
	for _, st := range states {
		if !t.shown(st) {
			continue
		}
		fn(t.judged(st), st.seq0)
	}
}

// startsBefore is the attempts' order: start time, then creation.
func startsBefore(a, b *state) bool {
	ai, bi := a.a.StartedAt, b.a.StartedAt
	if ai.Equal(bi) {
		return a.seq0 < b.seq0
	}
	return ai.Before(bi)
}

// shown reports whether an attempt is one: a journal unit never seen
// running an engine is not.
func (t *Tracker) shown(st *state) bool {
	uk := st.a.Host + "|" + st.a.Unit
	return st.text || st.j.Engine() != "" || t.engineUnits[uk] || (t.pastedUnits[uk] && len(t.engineUnits) == 0)
}

// judged is the attempt judged, its times in its host's zone, with its
// change version. An attempt whose version has not moved since it was
// last judged is not judged again: that attempt is returned.
func (t *Tracker) judged(st *state) *domain.Attempt {
	loc := t.zones[st.a.Host]
	if loc == nil {
		loc = t.knownZones[st.a.Host]
	}
	// What the judge holds and the zone change the attempt too: the
	// version takes them in here, where they are read (a zone learned from
	// one attempt's line shows every attempt of the host in it).
	if v := st.j.Version(); v != st.judgeV || loc != st.zone {
		st.judgeV, st.zone = v, loc
		t.changed(st)
	}
	if st.judgedAt != nil && st.judgedV == st.version {
		return st.judgedAt
	}
	a := t.judge(st).In(loc)
	if t.opt.KeepLog {
		a.Log = st.log.snapshot(st.ended)
	}
	a.Version = st.version
	st.judgedAt, st.judgedV = a, st.version
	return a
}

// Drain hands the attempts no later entry can change to fn, judged, in
// start order, and forgets them, so that memory holds only the attempts
// still open: those that ended before cutoff (log time) and are not the
// latest of their unit (a restart counter or late systemd record may still
// refer to that one). An attempt of a unit not yet seen running an engine
// stays until it is (or until Attempts decides at the end). fn gets the
// creation number Each gives; it returns how many were handed over.
func (t *Tracker) Drain(cutoff time.Time, fn func(a *domain.Attempt, seq int)) int {
	var out []*state
	keep := t.attempts[:0]
	for _, st := range t.attempts {
		a := st.a
		if st.ended && t.lastByUnit[a.Host+"|"+a.Unit] != st && !st.text && t.shown(st) &&
			!a.EndedAt.IsZero() && a.EndedAt.Before(cutoff) {
			out = append(out, st)
			t.forget(st)
			continue
		}
		keep = append(keep, st)
	}
	for i := len(keep); i < len(t.attempts); i++ {
		t.attempts[i] = nil
	}
	t.attempts = keep
	sort.SliceStable(out, func(i, j int) bool { return startsBefore(out[i], out[j]) })
	for _, st := range out {
		fn(t.judged(st), st.seq0)
	}
	return len(out)
}

// forget drops an attempt's entries from the lookup maps.
func (t *Tracker) forget(st *state) {
	a := st.a
	if t.byKey[a.Host+"|"+a.Unit+"|"+a.InvocationID] == st {
		delete(t.byKey, a.Host+"|"+a.Unit+"|"+a.InvocationID)
	}
	if a.ContainerID != "" && t.byContainer[a.ContainerID] == st {
		delete(t.byContainer, a.ContainerID)
	}
	if t.byName[a.Host+"|"+a.Container] == st {
		delete(t.byName, a.Host+"|"+a.Container)
	}
}

// judge computes the attempt's verdict, phase, findings, notes and evidence
// from its state. It does not change the state, so it can run repeatedly.
func (t *Tracker) judge(st *state) *domain.Attempt {
	return st.j.Judge(st.a, judge.End{Ended: st.ended, Text: st.text, Failed: st.failed, Result: st.result, Line: st.endLine,
		Exit: st.exitLine})
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
			t.forget(st)
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
			t.changed(st)
		}
	}
}

// splitLines yields the lines of a message that hold more than white
// space (a range over it allocates nothing, as it runs per entry).
func splitLines(msg string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for rest, more := msg, true; more; {
			var line string
			line, rest, more = strings.Cut(rest, "\n")
			if strings.TrimSpace(line) != "" && !yield(line) {
				return
			}
		}
	}
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
