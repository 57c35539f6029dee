package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/internal/race"
)

// storedAttempts returns the attempts of a database as the explain
// contract shows them plus the line count, the findings as stored (time,
// phase, note, evidence) and each evidence line's role, by id.
func storedAttempts(t *testing.T, dbPath string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range listStored(t, dbPath) {
		j := a.JSON()
		roles := make([]string, len(a.Evidence))
		for i, e := range a.Evidence {
			roles[i] = e.Role.String()
		}
		b, err := json.Marshal(struct {
			domain.AttemptJSON
			Lines         int
			StopRequested bool
			ExitCode      string
			StoredFinding []domain.Finding
			Roles         []string
		}{j, a.Lines, a.StopRequested, a.ExitCode, a.Findings, roles})
		if err != nil {
			t.Fatal(err)
		}
		out[a.ID] = string(b)
	}
	return out
}

// TestReplayInTwoParts replays each fixture cut in two at many points, one
// part after the other into one database, as an operator replays daily
// exports, then the second part again from 40 lines before the cut (an
// overlapping export): every attempt must come out as from one replay of
// the whole file, including the one the cut goes through (before Resume it
// was stored from the second part alone, its engine and shape unknown),
// down to its findings' times and evidence and the role each evidence line
// has. The fixtures are cut at 15 points, the journals of resumeJournals
// after every record from the first engine line on; the night fixture and
// those journals must also come out whole right after the second part, the
// attempt the cut goes through continued from the database alone (the
// day fixture's cuts go through a traceback and a split line, which only
// the memory of the earlier run held).
func TestReplayInTwoParts(t *testing.T) {
	dir := t.TempDir()
	type journal struct {
		path        string
		first, step int  // cuts: first, first+step, ...
		resumed     bool // must be whole right after the second part
	}
	var journals []journal
	for _, f := range fixtures {
		n := countLines(t, f) / 16
		journals = append(journals, journal{f, n, n, f == fixtures[0]})
	}
	for name, recs := range resumeJournals {
		f := filepath.Join(dir, name+".journal.json")
		writeJournal(t, f, name, recs)
		journals = append(journals, journal{f, len(started) + 1, 1, true})
	}
	for _, j := range journals {
		// Under -race, every 4th cut of the two fixtures (83 s of the
		// package's 242 s under the detector otherwise); each run checks
		// the same journal positions, the resume journals all of theirs.
		if race.Enabled && j.step > 1 {
			j.step *= 4
		}
		t.Run(filepath.Base(j.path), func(t *testing.T) { replayInTwoParts(t, j.path, j.first, j.step, j.resumed) })
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(bytes.SplitAfter(data, []byte("\n")))
}

// replayInTwoParts is TestReplayInTwoParts for journal f cut after line
// first, first+step, ...; resumed: compared right after the second part
// too, not only after the overlapping export.
func replayInTwoParts(t *testing.T, f string, first, step int, resumed bool) {
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.db")
	runCmd(t, "replay", "--db", whole, f)
	want := storedAttempts(t, whole)
	for cut := first; cut < len(lines)-1; cut += step {
		a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
		if err := os.WriteFile(a, bytes.Join(lines[:cut], nil), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(b, bytes.Join(lines[cut:], nil), 0o644); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(dir, "split.db")
		for _, p := range []string{db, db + "-wal", db + "-shm"} {
			os.Remove(p)
		}
		runCmd(t, "replay", "--db", db, a)
		runCmd(t, "replay", "--db", db, b)
		if resumed {
			sameAttempts(t, fmt.Sprintf("cut at line %d", cut), storedAttempts(t, db), want)
		}
		// An export overlapping the one before by 40 lines changes nothing.
		if err := os.WriteFile(b, bytes.Join(lines[max(cut-40, 0):], nil), 0o644); err != nil {
			t.Fatal(err)
		}
		runCmd(t, "replay", "--db", db, b)
		sameAttempts(t, fmt.Sprintf("cut at line %d, then 40 lines again", cut), storedAttempts(t, db), want)
	}
}

// sameAttempts reports every attempt of want that got lacks or has
// otherwise.
func sameAttempts(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d attempts, want %d", what, len(got), len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: attempt %s differs: %s", what, id, jsonDiff(got[id], w))
		}
	}
}

// journalRecord is one record of a made-up journal: a PID 1 record about
// the unit (msgID set) or a line of the unit's engine.
type journalRecord struct {
	msgID    string            // PID 1's MESSAGE_ID; "" for engine output
	msg      string            // MESSAGE
	fields   map[string]string // more fields (EXIT_CODE, UNIT_RESULT, ...)
	sameTime bool              // stamped with the record before's time (a burst)
}

// systemd's MESSAGE_IDs of the unit lifecycle records.
const (
	msgStarting = "7d4958e842da4a758f6c1cdc7b36dcc5"
	msgStarted  = "39f53479d3a045ac8e11786248231fbf"
	msgExited   = "98e322203f7a4ed290d09fe03c09fe15"
	msgFailed   = "d9b373ed55a64feb8242e02dbe79a49c"
	msgSuppress = "a596d6fe7bfa4994828e72309e95d61e"
)

// writeJournal writes recs as `journalctl -o json` of host "resumehost",
// unit name.service and one invocation, a record a second (sameTime: none).
func writeJournal(t *testing.T, path, name string, recs []journalRecord) {
	t.Helper()
	unit, inv := name+".service", fmt.Sprintf("%032x", len(name)*7919)
	start := time.Date(2026, 10, 2, 3, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	at := start.Add(-time.Second)
	for i, r := range recs {
		if !r.sameTime {
			at = at.Add(time.Second)
		}
		m := map[string]string{"MESSAGE": r.msg, "_HOSTNAME": "resumehost", "_BOOT_ID": "5a1e5a1e5a1e5a1e5a1e5a1e5a1e5a1e",
			"__CURSOR": fmt.Sprintf("s=5e5;i=%x;b=5a1e;t=%x", i+1, at.UnixMicro()), "__REALTIME_TIMESTAMP": fmt.Sprint(at.UnixMicro())}
		switch {
		case r.msgID == msgSuppress:
			m["MESSAGE_ID"], m["_PID"], m["_SYSTEMD_UNIT"], m["SYSLOG_IDENTIFIER"] = r.msgID, "311", "systemd-journald.service", "systemd-journald"
			m["OBJECT_SYSTEMD_UNIT"] = unit
		case r.msgID != "":
			m["MESSAGE_ID"], m["_PID"], m["_SYSTEMD_UNIT"], m["SYSLOG_IDENTIFIER"] = r.msgID, "1", "init.scope", "systemd"
			m["UNIT"], m["INVOCATION_ID"] = unit, inv
		default:
			m["_PID"], m["_TRANSPORT"], m["SYSLOG_IDENTIFIER"] = "4242", "stdout", name
			m["_SYSTEMD_UNIT"], m["_SYSTEMD_INVOCATION_ID"] = unit, inv
		}
		for k, v := range r.fields {
			m[k] = v
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// inBurst returns recs stamped with the time of the first.
func inBurst(recs []journalRecord) []journalRecord {
	out := slices.Clone(recs)
	for i := 1; i < len(out); i++ {
		out[i].sameTime = true
	}
	return out
}

// engineLines are engine output records.
func engineLines(msgs ...string) []journalRecord {
	out := make([]journalRecord, len(msgs))
	for i, m := range msgs {
		out[i] = journalRecord{msg: m}
	}
	return out
}

// sglangBoot is an SGLang boot up to loading its weights.
var sglangBoot = engineLines(
	"[2026-10-02 03:00:02] server_args=ServerArgs(model_path='/models/tiny', context_length=8192, max_running_requests=2, kv_cache_dtype='auto', tp_size=1, served_model_name='tiny')",
	"[2026-10-02 03:00:03] Init torch distributed begin.",
	"[2026-10-02 03:00:04] Init torch distributed ends. elapsed=0.84 s, mem usage=0.09 GB",
	"[2026-10-02 03:00:05] Load weight begin. avail mem=23.30 GB",
)

func joinRecords(parts ...[]journalRecord) []journalRecord {
	var out []journalRecord
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var (
	started = []journalRecord{{msgID: msgStarting, msg: "Starting unit..."}, {msgID: msgStarted, msg: "Started unit."}}
	// exitedKilled and failedSignal: the main process killed by SIGKILL.
	exitedKilled = journalRecord{msgID: msgExited, msg: "unit: Main process exited, code=killed, status=9/KILL",
		fields: map[string]string{"EXIT_CODE": "killed", "EXIT_STATUS": "9"}}
	failedSignal = journalRecord{msgID: msgFailed, msg: "unit: Failed with result 'signal'.", fields: map[string]string{"UNIT_RESULT": "signal"}}
)

// resumeJournals are attempts whose state a resumed replay must rebuild
// from what the database holds, cut at every line by TestReplayInTwoParts:
// verdicts the judge names itself (a failure no rule explains, a death by
// a signal with no line saying why), whose lines were put back by a guess
// from the verdict before the evidence lines had roles, and a finding
// raised outside the rules.
var resumeJournals = map[string][]journalRecord{
	// An exception no rule names, then error lines, then a failed exit:
	// unknown_failure from the exception (its phase and time), the error
	// lines shown after it.
	"unnamed-exception": joinRecords(started, sglangBoot, engineLines(
		"Traceback (most recent call last):\n"+
			`  File "/opt/frob/pool.py", line 2311, in align_pool`+"\n"+
			"    frob.align(pool)\n"+
			"frobnicate.MisalignedWidgetError: widget 0x1f is not aligned to 4096",
		"[2026-10-02 03:00:08] ERROR detokenizer: could not reach the scheduler, giving up",
		"[2026-10-02 03:00:09] ERROR tokenizer manager failed: scheduler is gone",
		"[2026-10-02 03:00:10] ERROR http server failed to drain requests",
	), []journalRecord{
		{msgID: msgExited, msg: "unit: Main process exited, code=exited, status=1/FAILURE",
			fields: map[string]string{"EXIT_CODE": "exited", "EXIT_STATUS": "1"}},
		{msgID: msgFailed, msg: "unit: Failed with result 'exit-code'.", fields: map[string]string{"UNIT_RESULT": "exit-code"}},
	}),
	// The main process killed by a signal with no line saying why: the
	// exit record is the evidence (analyzer.killed_by_signal), also while
	// the attempt waits for systemd's "Failed" record.
	"killed-silently": joinRecords(started, sglangBoot, []journalRecord{exitedKilled, failedSignal}),
	// The same, its unit's start records and first engine lines stamped
	// with one time, as journald stamps a burst: a part starting inside
	// the burst continues the stored attempt (journald's sequence numbers
	// tell), it does not re-read it from its start.
	"one-burst": joinRecords(inBurst(joinRecords(started, sglangBoot[:3])), sglangBoot[3:], []journalRecord{exitedKilled, failedSignal}),
	// A launcher's death line no rule names, then the failed exit:
	// unknown_failure on the death line.
	"death-line": joinRecords(started, sglangBoot, engineLines("launch: python3 exited with code 3"), []journalRecord{
		{msgID: msgExited, msg: "unit: Main process exited, code=exited, status=3/NOTIMPLEMENTED",
			fields: map[string]string{"EXIT_CODE": "exited", "EXIT_STATUS": "3"}},
		{msgID: msgFailed, msg: "unit: Failed with result 'exit-code'.", fields: map[string]string{"UNIT_RESULT": "exit-code"}},
	}),
	// journald suppressed some of the unit's lines: a log_loss finding
	// raised outside the rules, kept across the resume.
	"suppressed": joinRecords(started, sglangBoot[:2], []journalRecord{{msgID: msgSuppress,
		msg: "Suppressed 1234 messages from suppressed.service"}}, sglangBoot[2:], engineLines(
		"[2026-10-02 03:00:06] Load weight end. elapsed=1.00 s, type=Tiny, quant=none",
	)),
}

// jsonDiff names the top-level keys whose values differ, with both values
// from a little before their first difference, cut to 160 bytes.
func jsonDiff(got, want string) string {
	var g, w map[string]json.RawMessage
	_ = json.Unmarshal([]byte(got), &g)
	_ = json.Unmarshal([]byte(want), &w)
	cut := func(b json.RawMessage, from int) string {
		s := string(b[min(from, len(b)):])
		if from > 0 {
			s = "…" + s
		}
		if len(s) > 160 {
			return s[:160] + "…"
		}
		return s
	}
	var out []string
	for k, wv := range w {
		if gv := g[k]; string(gv) != string(wv) {
			at := 0
			for at < len(gv) && at < len(wv) && gv[at] == wv[at] {
				at++
			}
			at = max(at-40, 0)
			out = append(out, fmt.Sprintf("%s: got %s, want %s", k, cut(gv, at), cut(wv, at)))
		}
	}
	for k, gv := range g {
		if _, ok := w[k]; !ok {
			out = append(out, fmt.Sprintf("%s: got %s, want none", k, cut(gv, 0)))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
