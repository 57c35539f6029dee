package ingest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

func readText(t *testing.T, text string) []domain.Entry {
	t.Helper()
	var es []domain.Entry
	if _, err := Read(context.Background(), strings.NewReader(text), "paste", Options{Format: FormatText},
		func(e domain.Entry) error { es = append(es, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return es
}

// TestPastedSystemdLifecycle: PID 1's unit messages in pasted short output,
// newest and older systemd wordings, become the records journald stores
// with them; the unit's process lines are attributed to its run.
func TestPastedSystemdLifecycle(t *testing.T) {
	es := readText(t, `Jul 28 08:28:30 host1 systemd[1]: Started Ollama Service.
Jul 28 08:28:30 host1 ollama[74021]: Error: could not create directory mkdir /var/lib/ollama: permission denied
Jul 28 08:28:30 host1 systemd[1]: ollama.service: main process exited, code=exited, status=127/n/a
Jul 28 08:28:30 host1 systemd[1]: Unit ollama.service entered failed state.
Jul 28 08:28:33 host1 systemd[1]: ollama.service holdoff time over, scheduling restart.
Jul 28 08:28:33 host1 systemd[1]: Started Ollama Service.
Jul 28 08:28:33 host1 systemd[1]: ollama.service: Main process exited, code=dumped, status=11/SEGV
Jul 28 08:28:33 host1 systemd[1]: ollama.service: Failed with result 'core-dump'.
`)
	type rec struct{ unit, inv, msgID, status, restarts string }
	var got []rec
	for _, e := range es {
		if e.Unit == "" && e.Field("UNIT") == "" {
			continue // the description-only start: a record of no unit, its start comes once named
		}
		got = append(got, rec{e.Unit + e.Field("UNIT"), e.InvocationID + e.Field("INVOCATION_ID"), e.Field("MESSAGE_ID"),
			e.Field("EXIT_STATUS"), e.Field("N_RESTARTS")})
	}
	if len(got) != 8 {
		t.Fatalf("%d entries: %+v", len(got), got)
	}
	first, second := got[0].inv, got[5].inv
	if got[0].unit != "ollama.service" || got[0].msgID != "39f53479d3a045ac8e11786248231fbf" || first == "" {
		t.Errorf("start named by a later line: %+v", got[0])
	}
	if got[1].unit != "ollama.service" || got[1].inv != first || got[1].msgID != "" {
		t.Errorf("the unit's process line: %+v", got[1])
	}
	if got[2].status != "127" || got[2].inv != first || got[4].restarts != "1" {
		t.Errorf("exit and restart: %+v %+v", got[2], got[4])
	}
	if second == first || got[6].status != "SEGV" || got[6].inv != second {
		t.Errorf("the restarted run: %+v", got[6])
	}
	if !es[0].Time.Equal(time.Date(time.Now().Year(), 7, 28, 8, 28, 30, 0, time.UTC)) &&
		!es[0].Time.Equal(time.Date(time.Now().Year()-1, 7, 28, 8, 28, 30, 0, time.UTC)) {
		t.Errorf("time %v", es[0].Time)
	}
}

// TestPasteEnvelopes: each paste format's envelope is read and removed.
func TestPasteEnvelopes(t *testing.T) {
	for _, c := range []struct{ name, in, msg, source, host string }{
		{"localized month (de_AT)", "Jän 25 15:59:27 OS ollama[192151]: free(): invalid pointer", "free(): invalid pointer", "paste|OS|ollama", "OS"},
		{"localized month (zh_CN)", "1月 10 22:38:08 host1 ollama[17836]: Error: x", "Error: x", "paste|host1|ollama", "host1"},
		{"short-iso", "2026-10-01T21:40:00+0000 gpu1 vllm[12]: INFO ready", "INFO ready", "paste|gpu1|vllm", "gpu1"},
		{"kubectl --timestamps", "2025-01-01T10:00:00.123456789Z (APIServer pid=1) INFO x", "(APIServer pid=1) INFO x", "paste", ""},
		{"Docker Desktop column", "2025-05-30 18:35:36.952 | INFO 05-30 16:35:36 [core.py:1] x", "INFO 05-30 16:35:36 [core.py:1] x", "paste", ""},
		{"compose", "vllm-1  | 2025-01-01 10:00:00 INFO x", "2025-01-01 10:00:00 INFO x", "paste|vllm-1", ""},
		{"kubectl --prefix", "[pod/vllm-7d9f-x2/vllm] 2025-01-01 10:00:00 INFO x", "2025-01-01 10:00:00 INFO x", "paste|pod/vllm-7d9f-x2/vllm", ""},
		{"kubectl --prefix --timestamps", "[pod/llama-0/server] 2025-01-01T10:00:00.123456789Z main: x", "main: x", "paste|pod/llama-0/server", ""},
		{"TGI's own stamp stays", "2024-03-06T17:53:31.052367Z ERROR shard-manager: x", "2024-03-06T17:53:31.052367Z ERROR shard-manager: x", "paste", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			es := readText(t, c.in+"\n")
			if len(es) != 1 || es[0].Message != c.msg || es[0].Source != c.source || es[0].Host != c.host || es[0].Time.IsZero() {
				t.Fatalf("got %+v", es)
			}
		})
	}
	// containerd's CRI lines: P continues in the next line.
	es := readText(t, "2025-01-01T10:00:00.1Z stdout P first ha\n2025-01-01T10:00:00.2Z stdout F lf and the rest\n")
	if len(es) != 1 || es[0].Message != "first half and the rest" {
		t.Fatalf("CRI: %+v", es)
	}
	// A pager-cut line glued to the next record is two.
	es = readText(t, "Jan 09 00:19:56 h ollama[2]: Generating new pri>Jan 09 00:19:56 h ollama[2]: Your new public key is:\n")
	if len(es) != 2 || es[0].Message != "Generating new pri>" || es[1].Message != "Your new public key is:" {
		t.Fatalf("glued: %+v", es)
	}
}

// TestExportResyncsAfterCorruptLength: a binary field whose length is
// corrupt costs its own record, not the rest of the file.
func TestExportResyncsAfterCorruptLength(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 50; i++ {
		b.WriteString("__CURSOR=s=x;i=" + strings.Repeat("1", i%3+1) + "\n__REALTIME_TIMESTAMP=1790916000000000\n_SYSTEMD_UNIT=u.service\nMESSAGE\n")
		msg := "line " + strings.Repeat("x", i)
		length := len(msg)
		if i == 10 {
			length = 1 << 30 // corrupt: far past the end of the file
		}
		b.WriteString(string([]byte{byte(length), byte(length >> 8), byte(length >> 16), byte(length >> 24), 0, 0, 0, 0}))
		b.WriteString(msg + "\n\n")
	}
	var es []domain.Entry
	st, err := Read(context.Background(), strings.NewReader(b.String()), "x.export", Options{},
		func(e domain.Entry) error { es = append(es, e); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Format != FormatExport || len(es) != 49 || st.Malformed != 1 {
		t.Fatalf("format %v, %d entries, %d malformed (%v); want 49 and 1", st.Format, len(es), st.Malformed, st.Errors)
	}
	if es[10].Message != "line "+strings.Repeat("x", 11) {
		t.Errorf("the record after the corrupt one: %q", es[10].Message)
	}
}

// TestStalledPipeEndsWithContext: a read of a pipe whose writer says
// nothing ends when the context does, not when the writer closes.
func TestStalledPipeEndsWithContext(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Read(ctx, newCtxReader(ctx, pr), "-", Options{}, func(domain.Entry) error { return nil })
		done <- err
	}()
	if _, err := pw.Write([]byte("INFO a line\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the read did not end with its context")
	}
}

// TestExportThroughAPipe: export data arriving in small reads, as from
// `journalctl -f -o export`, gives the records of the whole file (a field
// name once aliased the buffer that reading a binary field moved).
func TestExportThroughAPipe(t *testing.T) {
	var whole bytes.Buffer
	w := bufio.NewWriter(&whole)
	f, err := os.Open("../examples/dankserver-night-ladder.journal.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for n := 0; sc.Scan() && n < 200; n++ {
		rec, err := ParseJSONRecord(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteExport(w, rec); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	read := func(r io.Reader) []Record {
		var out []Record
		if _, err := ReadExportRecords(context.Background(), r, "x", Options{}, func(rec Record) error { out = append(out, rec); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := read(bytes.NewReader(whole.Bytes()))
	pr, pw := io.Pipe()
	go func() {
		b := whole.Bytes()
		for i := 0; i < len(b); i += 777 {
			_, _ = pw.Write(b[i:min(i+777, len(b))]) // read(pr) reports a short stream
		}
		pw.Close()
	}()
	got := read(pr)
	if len(got) != len(want) || len(want) != 200 {
		t.Fatalf("%d records through the pipe, %d from the file", len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) || !bytes.Equal(got[i]["MESSAGE"], want[i]["MESSAGE"]) {
			t.Fatalf("record %d differs", i)
		}
	}
}
