package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/store/storetest"
)

// bootLog is the log of one vLLM-like boot at shape n: the lines of every
// boot, with the numbers that differ between shapes.
func bootLog(t0 time.Time, n, lines int) *domain.AttemptLog {
	l := &domain.AttemptLog{Total: lines}
	for i := range lines {
		// Line i is the same text in every boot but for the shape's
		// numbers, and unlike the boot's other lines (a hash of i).
		h := fnv.New64a()
		fmt.Fprint(h, i)
		l.Lines = append(l.Lines, domain.LogLine{Seq: i, Time: t0.Add(time.Duration(i) * 137 * time.Millisecond),
			Message: fmt.Sprintf("(EngineCore_DP0 pid=%d) INFO 10-01 21:%02d:14 [gpu_model_runner.py:%d] max_model_len %d: step %x %x",
				4000+n, n%60, 1000+i, 262144-n*8192, h.Sum64(), h.Sum64()*0x9e3779b97f4a7c15)})
	}
	return l
}

// boot is an attempt of unit on host with a log of lines lines.
func boot(t *testing.T, host, unit string, n, lines int) *domain.Attempt {
	t.Helper()
	a := storetest.Attempts()[0]
	a.ID = fmt.Sprintf("%s-%s-%d", host, unit, n)
	a.InvocationID, a.ContainerID = a.ID, ""
	a.Host, a.Unit = host, unit
	a.StartedAt = a.StartedAt.Add(time.Duration(n) * time.Hour)
	a.Log = bootLog(a.StartedAt, n, lines)
	ev := a.Log.Lines[lines-1]
	a.Evidence = []domain.Evidence{{Time: ev.Time, Cursor: "s=1;i=" + a.ID, Message: ev.Message}}
	a.Context, a.Timeline, a.Findings = nil, nil, nil
	return a
}

func chunkCodec(t *testing.T, db *DB, id string) (codec, size int) {
	t.Helper()
	if err := db.db.QueryRow(`SELECT codec, length(data) FROM attempt_log WHERE attempt_id = ? AND first_seq = 0`, id).Scan(&codec, &size); err != nil {
		t.Fatalf("chunk of %s: %v", id, err)
	}
	return codec, size
}

// TestLogDictionaries: a unit's first log chunk of at least minDictSource
// bytes becomes its dictionary; later chunks of the unit (this attempt's
// and later boots') are compressed against it, at a fraction of their size
// alone; another unit gets its own; a new process reads them all back
// whole (log view and evidence lines that refer to the log).
func TestLogDictionaries(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	short := boot(t, "gpu-a", "vllm.service", 0, 3) // too short to be a dictionary
	first := boot(t, "gpu-a", "vllm.service", 1, 60)
	second := boot(t, "gpu-a", "vllm.service", 2, 60)
	long := boot(t, "gpu-a", "vllm.service", 3, logChunkLines+40) // two chunks
	other := boot(t, "gpu-b", "vllm.service", 4, 60)
	// One encoder serves both units' dictionaries, switching between them.
	other2, third := boot(t, "gpu-b", "vllm.service", 5, 60), boot(t, "gpu-a", "vllm.service", 6, 60)
	// A chunk of 1 MiB (4 KiB lines), past the frames' 256 KiB window.
	wide := boot(t, "gpu-a", "vllm.service", 7, logChunkLines)
	for i := range wide.Log.Lines {
		wide.Log.Lines[i].Message += strings.Repeat(fmt.Sprintf(" %x", i*7919), 4096)[:4096-len(wide.Log.Lines[i].Message)]
	}
	wide.Evidence[0].Message = wide.Log.Lines[len(wide.Log.Lines)-1].Message
	saved := []*domain.Attempt{short, first, second, long, other, other2, third, wide}
	for _, a := range saved {
		if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM log_dicts`); n != 2 {
		t.Errorf("%d dictionaries, want 2 (one per unit and host)", n)
	}
	if n := count(t, db, `SELECT count(*) FROM log_dicts WHERE id = ?`, logDictID("gpu-a", "vllm.service")); n != 1 {
		t.Errorf("no dictionary under gpu-a's id")
	}
	for _, a := range []*domain.Attempt{short, first, other} {
		if c, _ := chunkCodec(t, db, a.ID); c != codecZstd {
			t.Errorf("%s: codec %d, want %d (no dictionary yet)", a.ID, c, codecZstd)
		}
	}
	c, size := chunkCodec(t, db, second.ID)
	alone := len(compress(nil, rawLogChunk(nil, second.Log.Lines)))
	if c != codecZstdDict || size*3 > alone {
		t.Errorf("second boot's chunk: codec %d, %d bytes; want codec %d and under a third of the %d bytes alone", c, size, codecZstdDict, alone)
	}
	if n := count(t, db, `SELECT count(*) FROM attempt_log WHERE attempt_id = ? AND codec = ?`, long.ID, codecZstdDict); n != 2 {
		t.Errorf("%d of the long boot's 2 chunks against the dictionary", n)
	}
	for _, a := range []*domain.Attempt{other2, third, wide} {
		if c, _ := chunkCodec(t, db, a.ID); c != codecZstdDict {
			t.Errorf("%s: codec %d, want %d", a.ID, c, codecZstdDict)
		}
	}

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for _, a := range saved {
		got, err := again.AttemptLog(ctx, a.ID, a.StartedAt.Location())
		if err != nil {
			t.Fatalf("log of %s: %v", a.ID, err)
		}
		if !reflect.DeepEqual(got, a.Log) {
			t.Errorf("log of %s read back differs", a.ID)
		}
		stored, err := again.GetAttempt(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored.Evidence) != 1 || stored.Evidence[0].Message != a.Evidence[0].Message {
			t.Errorf("evidence of %s: %+v", a.ID, stored.Evidence)
		}
	}
	if n := count(t, again, `SELECT count(*) FROM evidence`); n != 0 {
		t.Fatalf("%d evidence rows: the lines are not in attempt_lines", n)
	}
}

// TestLogDictionaryRolledBack: a dictionary written by a save that rolls
// back is gone with it; the unit's next save makes another of other
// content under the same id, and frames compressed against it read back
// (an encoder kept for the first content would write frames this row
// cannot decode).
func TestLogDictionaryRolledBack(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	// The lost boots print their lines in another order (the same bytes
	// elsewhere), and the second is saved again resumed (its log from
	// line 60 on), which reads its stored chunk back against the
	// dictionary the transaction wrote.
	b1, b2 := boot(t, "gpu-a", "vllm.service", 1, 60), boot(t, "gpu-a", "vllm.service", 2, 80)
	for _, a := range []*domain.Attempt{b1, b2} {
		for i, j := 0, len(a.Log.Lines)-1; i < j; i, j = i+1, j-1 {
			a.Log.Lines[i].Message, a.Log.Lines[j].Message = a.Log.Lines[j].Message, a.Log.Lines[i].Message
		}
	}
	resumed := *b2
	resumed.Log = &domain.AttemptLog{Lines: b2.Log.Lines[60:], Total: 80}
	b2.Log = &domain.AttemptLog{Lines: b2.Log.Lines[:60], Total: 60}
	resumed.Evidence = []domain.Evidence{{Time: b2.Log.Lines[5].Time, Cursor: "s=1;i=5", Message: b2.Log.Lines[5].Message}}
	lost := []*domain.Attempt{b1, b2, &resumed, nil}
	if err := db.SaveAttempts(ctx, lost, nil); err == nil {
		t.Fatal("a nil attempt saved")
	}
	if n := count(t, db, `SELECT count(*) FROM log_dicts`); n != 0 {
		t.Fatalf("%d dictionaries after a rollback", n)
	}
	first, second := boot(t, "gpu-a", "vllm.service", 7, 60), boot(t, "gpu-a", "vllm.service", 8, 60)
	second.ID = b2.ID // its stored chunk against the dictionary that is gone
	for _, a := range []*domain.Attempt{first, second} {
		if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := chunkCodec(t, db, second.ID); c != codecZstdDict {
		t.Fatalf("codec %d, want %d", c, codecZstdDict)
	}
	for _, fresh := range []bool{false, true} {
		d := db
		if fresh {
			d = reopen(t, db, path)
		}
		got, err := d.AttemptLog(ctx, second.ID, second.StartedAt.Location())
		if err != nil || !reflect.DeepEqual(got, second.Log) {
			t.Errorf("log read back (new process %v): %v (differs: %v)", fresh, err, !reflect.DeepEqual(got, second.Log))
		}
	}
}

// reopen closes db and opens path again: a process with no dictionaries
// in memory.
func reopen(t *testing.T, db *DB, path string) *DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestLogDictionaryMissing: a chunk whose dictionary row is gone, or
// claims one that never was, fails the read with an error naming it.
func TestLogDictionaryMissing(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	first, second := boot(t, "gpu-a", "vllm.service", 1, 60), boot(t, "gpu-a", "vllm.service", 2, 60)
	for _, a := range []*domain.Attempt{first, second} {
		if err := db.SaveAttempts(ctx, []*domain.Attempt{a}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.db.Exec(`DELETE FROM log_dicts`); err != nil {
		t.Fatal(err)
	}
	d := reopen(t, db, path)
	if _, err := d.AttemptLog(ctx, second.ID, nil); err == nil || !strings.Contains(err.Error(), "log dictionary") {
		t.Errorf("log without its dictionary: %v", err)
	}
	if _, err := d.GetAttempt(ctx, second.ID); err == nil {
		t.Errorf("evidence read from a log without its dictionary")
	}
	if _, err := d.AttemptLog(ctx, first.ID, nil); err != nil {
		t.Errorf("a chunk compressed alone: %v", err)
	}
}

// FuzzDecodeDictChunk: any codecZstdDict chunk decodes or fails, without
// a panic, whatever dictionary id its header names (one stored, one not,
// none), and within the chunk's cap.
func FuzzDecodeDictChunk(f *testing.F) {
	db, err := Open(f.TempDir() + "/analyzer.db")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	dict := rawLogChunk(nil, bootLog(time.Unix(1791008244, 0), 1, 60).Lines)
	id := logDictID("gpu-a", "vllm.service")
	if _, err := db.db.Exec(`INSERT INTO log_dicts (id, content) VALUES (?, ?)`, id, dict); err != nil {
		f.Fatal(err)
	}
	f.Add(db.dicts.compress(id, dict, nil, rawLogChunk(nil, bootLog(time.Unix(1791008244, 0), 2, 60).Lines)))
	f.Add(compress(nil, dict))
	r := &chunkReader{ctx: context.Background(), q: db.db, dicts: &db.dicts}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeLogChunk(r, data, codecZstdDict, time.UTC, nil)
		if err == nil && len(got) > logChunkLines*4 {
			t.Fatalf("%d lines from one chunk", len(got))
		}
	})
}

// TestLogDictionaryBadRow: a log_dicts row this store did not write (here
// empty) under a unit's id leaves that unit's chunks compressed alone; the
// saves go on and read back.
func TestLogDictionaryBadRow(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	if _, err := db.db.Exec(`INSERT INTO log_dicts (id, content) VALUES (?, x'')`, logDictID("gpu-a", "vllm.service")); err != nil {
		t.Fatal(err)
	}
	first, second := boot(t, "gpu-a", "vllm.service", 1, 60), boot(t, "gpu-a", "vllm.service", 2, 60)
	if err := db.SaveAttempts(ctx, []*domain.Attempt{first, second}, nil); err != nil {
		t.Fatalf("a bad dictionary row stopped the save: %v", err)
	}
	for _, a := range []*domain.Attempt{first, second} {
		if c, _ := chunkCodec(t, db, a.ID); c != codecZstd {
			t.Errorf("%s: codec %d, want %d", a.ID, c, codecZstd)
		}
		if got, err := db.AttemptLog(ctx, a.ID, a.StartedAt.Location()); err != nil || !reflect.DeepEqual(got, a.Log) {
			t.Errorf("log of %s: %v", a.ID, err)
		}
	}
}
