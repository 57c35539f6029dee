package judge

import (
	"regexp"
	"strings"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/rules"
)

// FatalKind says what ended (or may have ended) a process.
type FatalKind string

// Fatal kinds, strongest evidence first.
const (
	// FatalException is an exception that ended a Python traceback (or a
	// bare "SomeError: ..." line), a C++ terminate, a Go or Rust panic, or
	// a failed GGML_ASSERT.
	FatalException FatalKind = "exception"
	// FatalDeath is a death line: a signal, "Killed", a core dump, a
	// stated non-zero exit code (the rule files' fatal vocabulary).
	FatalDeath FatalKind = "death"
	// FatalErrorLog is a line logged at ERROR, CRITICAL or FATAL level.
	FatalErrorLog FatalKind = "error_log"
)

// Fatal is one fatal event of an attempt's output.
type Fatal struct {
	Kind FatalKind
	// Type and Message of an exception ("torch.OutOfMemoryError",
	// "CUDA out of memory. Tried to allocate ...").
	Type, Message string
	// Frames are the traceback's frames, outermost first ("file:func").
	Frames []string
	// Start is the attempt's line number where the event began (its
	// traceback, or the first exception of a chain); Line where it ended.
	Start, Line int
	// Evidence is the event's final line.
	Evidence domain.Evidence
	// Phase the attempt was in; AfterReady: the engine had reported
	// readiness.
	Phase      domain.Phase
	AfterReady bool
	// ExitStatus is the exit status the line states (-1: none).
	ExitStatus int
}

// Python traceback grammar (CPython's traceback module): a header, frames
// `File "path", line N, in func` each followed by source lines, and the
// exception line `module.Type: message`. Chained exceptions are separated
// by one of the two chain sentences.
var (
	frameLine = rules.MustPrefixRegexp(`^\s*File "([^"]*)", line \d+(?:, in (\S+))?`)
	// IPython/Jupyter frames: "/path/mod.py in func(args)" or
	// "File /path/mod.py:12, in func(args)", possibly as markdown links.
	ipythonFrame = rules.MustPrefixRegexp(`^\s*(?:File )?\[?([^\s\[\]()]+\.py)(?:\]\([^)]*\))?(?::\d+,)? in (\w+)\(`)
	cppThrow     = regexp.MustCompile(cppThrown + `'([^']+)'`)
	cppWhat      = regexp.MustCompile(`^\s*what\(\):\s*(.*)$`)
	ggmlAbort    = regexp.MustCompile(`GGML_ASSERT(?:\((.*)\) failed|: )|GGML_ABORT|ggml_abort`)
	goPanic      = regexp.MustCompile(`^` + goPanicked + `(.*)$`)
	rustPanic    = regexp.MustCompile(`^` + rustPanicked + `[^']*' panicked at (.*)$`)
	// raiseSource is a frame's source line that raises: when the paste is
	// cut before the exception line, it names the exception.
	raiseSource = rules.MustPrefixRegexp(`^\s*raise ((?:[A-Za-z_]\w*\.)*[A-Z]\w*)\(`)
)

// Literals looked for before a regexp runs (most lines hold neither, and
// a regexp's call costs ten times a search for its literal). excHeader
// also opens Jupyter's "RuntimeError     Traceback (most recent call last)".
const (
	cppThrown    = "terminate called after throwing an instance of "
	excHeader    = "Traceback (most recent call last)"
	goPanicked   = "panic: "
	rustPanicked = "thread '"
)

// excState is one process's traceback in progress.
type excState struct {
	open     bool // inside a traceback, before its exception line
	start    int  // line where this traceback (or its chain) began
	frames   []string
	lines    int  // lines read in this traceback
	chained  bool // a chain sentence was read: the next traceback continues the event
	lastExc  int  // line of the last exception line of this process
	chainBeg int  // start of the event the chain continues
	cpp      *Fatal
	// intro is the line that opened the traceback when it says more than
	// the header ("Initialization failed. warmup error: Traceback ...").
	intro *domain.Evidence
	// raising is the exception the innermost frame so far raises.
	raising string
}

// maxTracebackLines bounds a traceback: past it, the block is closed (a
// cut paste) and the next line judged on its own.
const maxTracebackLines = 400

// excReader follows tracebacks per process through an attempt's lines and
// collects its fatal events. It holds a bounded amount of state: at most
// maxProcs processes, maxFatals events, maxFrames frames per traceback.
type excReader struct {
	procs  map[string]*excState
	fatals []Fatal
	// lastKey is the process whose traceback opened last: a line with no
	// process prefix continues it (engines that prefix only the first
	// line of a multi-line message, SGLang's logger among them).
	lastKey string
	// quiet: no process has an open traceback, as found by the last line
	// that changed nothing (saves walking procs on every line).
	quiet bool
}

const (
	maxProcs  = 64
	maxFatals = 32
	maxFrames = 64
)

// lineInfo is what the exception reader made of one line.
type lineInfo struct {
	// event is the line number where the line's event began: its
	// traceback's (or chain's) start, or the line itself.
	event int
	// frame is "file:func" for a traceback frame line.
	frame string
	// fatal is set when the line ended a fatal event.
	fatal *Fatal
	// death: the line is a death line (rules.Set.FatalLine: a signal, an
	// exit, an abort), whatever level it was logged at.
	death bool
	// intro is the line that opened the line's traceback, when it says
	// more than the traceback header.
	intro *domain.Evidence
	// raising is the exception type a frame's source line raises, and
	// block the traceback it is in (a cut paste may end there).
	raising string
	block   *excState
	// level is the line's log level ("" unknown); parsed says whether the
	// envelope was read at all.
	level  string
	parsed bool
}

func (x *excReader) proc(key string) *excState {
	if x.procs == nil {
		x.procs = map[string]*excState{}
	}
	st := x.procs[key]
	if st == nil {
		if len(x.procs) >= maxProcs {
			for k := range x.procs { // forget an arbitrary one: bounded memory
				delete(x.procs, k)
				break
			}
		}
		st = &excState{lastExc: -1}
		x.procs[key] = st
	}
	return st
}

// line reads one line (after the engine's prefix strip), number n of the
// attempt, in phase p; matters is mayMatter(text).
func (x *excReader) line(text string, matters bool, n int, ev domain.Evidence, p domain.Phase, afterReady bool) lineInfo {
	info := lineInfo{event: n}
	if !x.reads(matters) {
		return info
	}
	msg, key, level := rules.Envelope(text)
	info.level, info.parsed = level, true
	key = x.continued(key)
	st := x.proc(key)
	in := &excInput{msg: msg, trimmed: strings.TrimSpace(msg), key: key, n: n, ev: ev, p: p, afterReady: afterReady}
	if st.cpp != nil && x.cppEnd(st, in, &info) {
		return info
	}
	if m := submatchIf(cppThrown, cppThrow, in.trimmed); m != nil {
		st.cpp = &Fatal{Kind: FatalException, Type: m[1], Start: n}
		return info
	}
	if x.chain(st, in, &info) {
		return info
	}
	if !st.open && st.cpp == nil && frameLine.MatchString(msg) {
		// A paste that starts inside a traceback: its frames open one.
		*st = excState{open: true, start: n, lastExc: st.lastExc, chainBeg: n}
		x.lastKey = key
	}
	if st.open {
		x.traceback(st, in, &info)
		return info
	}
	x.bare(st, in, level, &info)
	return info
}

// excInput is one line as the exception reader reads it.
type excInput struct {
	msg     string // the line without its envelope
	trimmed string // msg without surrounding space
	key     string // the process the line came from (Envelope)
	n       int    // the attempt's line number
	ev      domain.Evidence
	// p is the phase the attempt is in; afterReady: the engine had
	// reported readiness.
	p          domain.Phase
	afterReady bool
}

// reads reports whether the reader needs the line: a process has a
// traceback or a C++ terminate open, or the line holds one of the words
// that can open one (matters).
func (x *excReader) reads(matters bool) bool {
	anyOpen := false
	if !x.quiet {
		for _, st := range x.procs {
			if st.open || st.cpp != nil {
				anyOpen = true
				break
			}
		}
		x.quiet = !anyOpen
	}
	if !anyOpen && !matters {
		return false
	}
	x.quiet = false // what follows may open a traceback
	return true
}

// continued is the process a line with process key key belongs to: a line
// without one continues the traceback that opened last, unless the
// unprefixed process has its own open.
func (x *excReader) continued(key string) string {
	if key == "" && x.lastKey != "" {
		if own := x.procs[""]; own == nil || !own.open {
			if last := x.procs[x.lastKey]; last != nil && last.open {
				return x.lastKey
			}
		}
	}
	return key
}

// newFatal records fatal event f, which ends at line in.
func (x *excReader) newFatal(in *excInput, f Fatal) *Fatal {
	f.Line, f.Evidence, f.Phase, f.AfterReady = in.n, in.ev, in.p, in.afterReady
	if f.ExitStatus == 0 {
		f.ExitStatus = -1
	}
	if len(x.fatals) < maxFatals {
		x.fatals = append(x.fatals, f)
		return &x.fatals[len(x.fatals)-1]
	}
	return &f
}

// cppEnd ends the C++ terminate open in st ("terminate called after
// throwing an instance of 'T'" then "  what():  message"): with its
// message when line in is the what() line, which it then reports read.
func (x *excReader) cppEnd(st *excState, in *excInput, info *lineInfo) bool {
	f := st.cpp
	st.cpp = nil
	if m := cppWhat.FindStringSubmatch(in.msg); m != nil {
		f.Message = m[1]
		info.fatal = x.newFatal(in, *f)
		info.event = f.Start
		return true
	}
	info.fatal = x.newFatal(in, *f)
	return false
}

// eventStart is the line where an exception at line n begins its event:
// the start of the chain it continues, or n.
func (st *excState) eventStart(n int) int {
	if st.chained && st.lastExc >= 0 && n-st.lastExc < 50 {
		return st.chainBeg
	}
	return n
}

// chain reads a traceback header, which opens a traceback in st, or a
// chain sentence; it reports whether line in was one.
func (x *excReader) chain(st *excState, in *excInput, info *lineInfo) bool {
	switch {
	case strings.Contains(in.trimmed, excHeader):
		n := in.n
		start := st.eventStart(n)
		intro := st.intro
		if start == n {
			intro = nil
			if before, _, _ := strings.Cut(in.trimmed, "Traceback"); len(strings.TrimSpace(strings.TrimRight(before, ": "))) > 12 {
				e := in.ev
				intro = &e
			}
		}
		*st = excState{open: true, start: start, lastExc: st.lastExc, chainBeg: start, intro: intro}
		x.lastKey = in.key
		info.event = start
		if name, _, ok := matchExcLine(strings.TrimSpace(strings.SplitN(in.trimmed, "Traceback", 2)[0])); ok && name != "" {
			// Jupyter's header names the type first; the message comes at the end.
			st.frames = append(st.frames, "")[:0]
		}
		return true
	case strings.HasPrefix(in.trimmed, "The above exception was the direct cause") || strings.HasPrefix(in.trimmed, "During handling of the above exception"):
		st.chained = true
		info.event = st.chainBeg
		return true
	}
	return false
}

// traceback reads line in inside st's open traceback: a frame, a source
// line that raises, the exception line that closes it, or other text.
func (x *excReader) traceback(st *excState, in *excInput, info *lineInfo) {
	msg := in.msg
	st.lines++
	info.event = st.start
	info.intro = st.intro
	if m := frameLine.FindString(msg); m != "" {
		file, fn := frameParts(m)
		info.frame = file + ":" + fn
	} else if m := ipythonFrame.FindStringSubmatch(msg); m != nil {
		info.frame = m[1] + ":" + m[2]
	}
	if info.frame != "" {
		if len(st.frames) < maxFrames {
			st.frames = append(st.frames, info.frame)
		}
		return
	}
	if m := raiseSource.FindStringSubmatch(msg); m != nil {
		st.raising = m[1]
		info.raising, info.block = m[1], st
		return
	}
	if t, m, ok := exceptionLine(msg); ok {
		st.open = false
		st.lastExc = in.n
		st.chained = false
		info.fatal = x.newFatal(in, Fatal{Kind: FatalException, Type: t, Message: m, Start: st.start,
			Frames: append([]string(nil), st.frames...)})
		return
	}
	if st.lines > maxTracebackLines {
		st.open = false
	}
}

// bare reads line in outside a traceback: a bare exception line (a paste
// that starts at the end of a traceback, or an error printed without
// one), a panic, a failed assertion, a line logged at error level.
func (x *excReader) bare(st *excState, in *excInput, level string, info *lineInfo) {
	n, trimmed := in.n, in.trimmed
	if t, m, ok := exceptionLine(in.msg); ok {
		if t == "Error" {
			// "Error: ..." is a program's last word (Go's cobra, Rust's
			// main returning Err): it ended, but says no more than that.
			info.fatal = x.newFatal(in, Fatal{Kind: FatalDeath, Type: t, Message: m, Start: n})
			return
		}
		start := st.eventStart(n)
		st.lastExc, st.chainBeg, st.chained = n, start, false
		info.event = start
		info.fatal = x.newFatal(in, Fatal{Kind: FatalException, Type: t, Message: m, Start: start})
		return
	}
	if m := submatchIf(goPanicked, goPanic, trimmed); m != nil {
		info.fatal = x.newFatal(in, Fatal{Kind: FatalException, Type: "panic", Message: m[1], Start: n})
		return
	}
	if m := submatchIf(rustPanicked, rustPanic, trimmed); m != nil {
		// A Rust panic names a source location, rarely a cause: the
		// process died.
		info.fatal = x.newFatal(in, Fatal{Kind: FatalDeath, Type: "panic", Message: m[1], Start: n})
		return
	}
	// The literal check spares the unanchored regex on every other line.
	if (strings.Contains(trimmed, "GGML_A") || strings.Contains(trimmed, "ggml_abort")) && ggmlAbort.MatchString(trimmed) {
		info.fatal = x.newFatal(in, Fatal{Kind: FatalException, Type: "GGML_ASSERT", Message: trimmed, Start: n})
		return
	}
	if level == "error" || level == "critical" {
		info.fatal = x.newFatal(in, Fatal{Kind: FatalErrorLog, Message: trimmed, Start: n})
	}
}

// submatchIf is re.FindStringSubmatch(s), without running re when s lacks
// lit, which every match of re holds.
func submatchIf(lit string, re *regexp.Regexp, s string) []string {
	if !strings.Contains(s, lit) {
		return nil
	}
	return re.FindStringSubmatch(s)
}

// exceptionLine reports whether s (an enveloped-stripped line) is a Python
// exception line, and its type and message. Indented lines are source or
// frames, not the exception.
func exceptionLine(s string) (typ, msg string, ok bool) {
	name, msg, ok := matchExcLine(s)
	if !ok {
		return "", "", false
	}
	last := name[strings.LastIndexByte(name, '.')+1:]
	if !excSuffixed(last) && !(strings.Contains(name, ".") && msg != "") {
		return "", "", false
	}
	if !strings.Contains(s, ":") && !excSuffixed(last) {
		return "", "", false
	}
	return name, msg, true
}

// frameParts is submatches 1 and 2 of frameLine's match m, its file and
// function, read from the match (its DFA finds it): the regexp package
// took ~1.4 % of a night journal's explain to find them. The file runs
// from the first '"' to the next; the function is what follows ", in "
// after the line number (the file's own text may hold ", in ").
func frameParts(m string) (file, fn string) {
	open := strings.IndexByte(m, '"') + 1
	end := open + strings.IndexByte(m[open:], '"')
	rest := strings.TrimLeft(m[end+len(`", line `):], "0123456789")
	return m[open:end], strings.TrimPrefix(rest, ", in ")
}

// matchExcLine reports whether s is a Python exception line, a dotted name
// whose last part is capitalized, then ": message" or the end, and its
// name and message: the match of
// ^((?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Z][A-Za-z0-9_]*)(?::(?:\s+(.*))?)?\s*$
// and its two submatches (the tests hold it to the regexp), read by hand:
// the regexp's backtracker cleared state for every byte of a long
// message, ~1 % of a night journal's explain. The
// name is the run of name bytes that starts s (a shorter one would be
// followed by a name byte, which neither ':' nor a blank nor the end is);
// after the colon the greedy \s+ and .* take all they can, and where that
// leaves a non-blank after the first newline no shorter split helps.
func matchExcLine(s string) (name, msg string, ok bool) {
	i := 0
	for i < len(s) && (s[i] == '.' || rules.IsWordByte(s[i])) {
		i++
	}
	name, rest := s[:i], s[i:]
	if !dottedType(name) {
		return "", "", false
	}
	if blanks(rest) {
		return name, "", true
	}
	if rest[0] != ':' {
		return "", "", false
	}
	rest = rest[1:]
	w := 0
	for w < len(rest) && rules.IsRESpace(rest[w]) {
		w++
	}
	if w == 0 {
		return name, "", rest == ""
	}
	e := len(rest)
	if k := strings.IndexByte(rest[w:], '\n'); k >= 0 {
		e = w + k
	}
	if !blanks(rest[e:]) {
		return "", "", false
	}
	return name, rest[w:e], true
}

// dottedType reports whether name is dotted parts of word bytes, none
// empty or starting with a digit, the last starting with a capital.
func dottedType(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	if last == "" || last[0] < 'A' || last[0] > 'Z' {
		return false
	}
	for part := range strings.SplitSeq(name, ".") {
		if part == "" || part[0] >= '0' && part[0] <= '9' {
			return false
		}
	}
	return true
}

// blanks reports whether s is all \s (rules.IsRESpace).
func blanks(s string) bool {
	for i := 0; i < len(s); i++ {
		if !rules.IsRESpace(s[i]) {
			return false
		}
	}
	return true
}

// excSuffixes end the last part of a name that is an exception without a
// module path.
var excSuffixes = []string{"Error", "Exception", "Exit", "Interrupt", "Failure", "Fault", "Unsupported", "Timeout", "Violation"}

func excSuffixed(last string) bool {
	for _, x := range excSuffixes {
		if strings.HasSuffix(last, x) {
			return true
		}
	}
	return false
}

// addDeath records a death line matched by the fatal vocabulary.
func (x *excReader) addDeath(n int, ev domain.Evidence, p domain.Phase, afterReady bool, exit int) *Fatal {
	f := Fatal{Kind: FatalDeath, Start: n, Line: n, Evidence: ev, Phase: p, AfterReady: afterReady, ExitStatus: exit, Message: ev.Message}
	if len(x.fatals) < maxFatals {
		x.fatals = append(x.fatals, f)
		return &x.fatals[len(x.fatals)-1]
	}
	return &f
}
