package journald

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/llmfleet/analyzer/domain"
	"github.com/llmfleet/analyzer/ingest"
)

// ProcReader reads the journal through `journalctl --follow -o export` in a
// child process, as Vector and other shippers do, instead of sd-journal in
// this process: a journal file truncated or corrupted under the reader
// raises SIGBUS in whoever has it mapped, and a stuck read blocks its
// thread; in a child both cost a restart of the child, which resumes after
// the last cursor read. The child is restarted when it exits or when the
// followed directory is replaced. What could not be read is reported as a
// gap (TakeGap): a cursor no longer in the journal (the file truncated,
// rotated away or vacuumed), or a new journal file holding entries older
// than the read position (journal-remote receiving a host late), which a
// merged, time-ordered read skips.
type ProcReader struct {
	dir  string
	args []string // seek arguments of the first run

	mu         sync.Mutex
	gaps       []string
	lastCursor string
	lastTime   time.Time
	bad        int64

	ch      chan procItem
	pending *procItem
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	started bool
	// expect is the cursor the first record of the next run must carry
	// (it resumes at a cursor read before, or at a saved one); drop says
	// that record was handed over already.
	expect string
	drop   bool
	files  map[fileID]bool // journal files of dir seen so far
	// seqRead is the highest sequence number read per sequence-number id
	// (the s= and i= of a cursor): a new file whose first entry is at or
	// below it was read already (renamed on rotation, or found late).
	seqRead map[string]uint64
}

type procItem struct {
	rec    ingest.Record
	cursor string
}

// journalctlPath is the journalctl the reader runs.
var journalctlPath = "journalctl"

// procRestartDelay is the wait before a child that ended is started again.
var procRestartDelay = time.Second

// dirCheckEvery is how often the followed directory is checked for being
// replaced and for new journal files.
var dirCheckEvery = 2 * time.Second

// OpenProc prepares a reader of the local journal (dir == "") or of the
// journal files in dir; nothing runs until the first Next or Wait.
func OpenProc(dir string) (*ProcReader, error) {
	if _, err := exec.LookPath(journalctlPath); err != nil {
		return nil, fmt.Errorf("journald: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &ProcReader{dir: dir, ch: make(chan procItem, 256), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		files: map[fileID]bool{}, seqRead: map[string]uint64{}}, nil
}

// SeekAt positions so that Next returns the entry of cursor itself; a
// cursor not in the journal is ErrCursorGone, and reading then starts at
// the oldest entry.
func (r *ProcReader) SeekAt(cursor string) error {
	if err := r.checkCursor(cursor); err != nil {
		r.args, r.expect = []string{"--no-tail"}, ""
		return err
	}
	r.args, r.expect, r.drop = []string{"--no-tail", "--cursor=" + cursor}, cursor, false
	return nil
}

// SeekAfter positions so that Next returns the entry after cursor; a cursor
// not in the journal is ErrCursorGone, and reading then starts at the
// oldest entry.
func (r *ProcReader) SeekAfter(cursor string) error {
	if err := r.checkCursor(cursor); err != nil {
		r.args, r.expect = []string{"--no-tail"}, ""
		return err
	}
	r.args, r.expect, r.drop = []string{"--no-tail", "--cursor=" + cursor}, cursor, true
	return nil
}

// SeekSince positions before the first entry at or after t.
func (r *ProcReader) SeekSince(t time.Time) error {
	r.args = []string{"--no-tail", "--since=@" + strconv.FormatInt(t.Unix(), 10)}
	return nil
}

// SeekTail positions after the newest entry.
func (r *ProcReader) SeekTail() error {
	r.args = []string{"--lines=0"}
	return nil
}

// base is journalctl's arguments for the journal read.
func (r *ProcReader) base() []string {
	// --merge: without it journalctl 252 --follow shows only the newest
	// boot, so a file of another host or boot added later is never read.
	args := []string{"--output=export", "--all", "--no-pager", "--quiet", "--merge"}
	if r.dir != "" {
		args = append(args, "--directory="+r.dir)
	}
	return args
}

// checkCursor runs a one-shot journalctl at cursor: the cursor exists when
// the first entry it prints carries it.
func (r *ProcReader) checkCursor(cursor string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, journalctlPath, append(r.base(), "--cursor="+cursor)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	first := ""
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if c, ok := strings.CutPrefix(sc.Text(), "__CURSOR="); ok {
			first = c
			break
		}
	}
	cancel()
	_ = cmd.Wait()
	if first != cursor {
		return fmt.Errorf("%w: %s (journalctl: %s)", ErrCursorGone, cursor, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// Next returns the next entry read, or ok == false when there is none now.
func (r *ProcReader) Next() (ingest.Record, string, bool, error) {
	r.start()
	if r.pending != nil {
		it := *r.pending
		r.pending = nil
		return it.rec, it.cursor, true, nil
	}
	select {
	case it := <-r.ch:
		return it.rec, it.cursor, true, nil
	case <-r.done:
		return nil, "", false, errors.New("journald: reader closed")
	default:
		return nil, "", false, nil
	}
}

// Wait waits for an entry, at most one second; it returns at once when ctx
// is done.
func (r *ProcReader) Wait(ctx context.Context) {
	r.start()
	if r.pending != nil {
		return
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case it := <-r.ch:
		r.pending = &it
	case <-t.C:
	case <-r.done:
	case <-ctx.Done():
	}
}

// TakeGap returns (and forgets) what the reader could not read since the
// last call, "" when nothing was lost.
func (r *ProcReader) TakeGap() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := strings.Join(r.gaps, "; ")
	r.gaps = nil
	return g
}

// Bad is the number of records journalctl printed that could not be read.
func (r *ProcReader) Bad() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}

// Close stops the child and the reader.
func (r *ProcReader) Close() error {
	r.cancel()
	if r.started {
		<-r.done
	}
	return nil
}

func (r *ProcReader) gap(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.gaps) < 16 {
		r.gaps = append(r.gaps, fmt.Sprintf(format, args...))
	}
}

func (r *ProcReader) start() {
	if r.started {
		return
	}
	r.started = true
	if r.dir != "" {
		r.scanFiles(false)
	}
	go r.supervise()
}

// supervise runs journalctl until the reader is closed, starting it again
// after the last cursor read whenever it ends or its directory is replaced.
func (r *ProcReader) supervise() {
	defer close(r.done)
	args := r.args
	for r.ctx.Err() == nil {
		r.runChild(args)
		if r.ctx.Err() != nil {
			return
		}
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(procRestartDelay):
		}
		r.mu.Lock()
		last, lastTime := r.lastCursor, r.lastTime
		r.mu.Unlock()
		switch {
		case last != "":
			if err := r.checkCursor(last); err != nil {
				r.gap("journal cursor %s is gone (a file truncated, rotated away or vacuumed): entries after %s were not read",
					last, lastTime.UTC().Format(time.RFC3339))
				args = []string{"--no-tail", "--since=@" + strconv.FormatInt(lastTime.Unix(), 10)}
				r.expect, r.drop = "", false
				continue
			}
			args, r.expect, r.drop = []string{"--no-tail", "--cursor=" + last}, last, true
		default:
			args = r.args
		}
	}
}

// runChild runs one journalctl and hands its records over until it ends,
// the reader is closed, or the followed directory is replaced.
func (r *ProcReader) runChild(seek []string) {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, journalctlPath, append(append(r.base(), "--follow"), seek...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the analyzer
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.gap("journalctl: %v", err)
		return
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	if err := cmd.Start(); err != nil {
		r.gap("journalctl did not start: %v", err)
		return
	}
	if r.dir != "" {
		go r.watchDir(ctx, cancel)
	}
	first := true
	_, rerr := ingest.ReadExportRecords(ctx, out, "journalctl", ingest.Options{}, func(rec ingest.Record) error {
		cursor := string(rec["__CURSOR"])
		if first {
			first = false
			if r.expect != "" && cursor != r.expect {
				r.gap("journal cursor %s was not found where reading resumed: entries between were not read", r.expect)
			} else if r.expect != "" && r.drop {
				return nil // read before
			}
		}
		r.mu.Lock()
		r.lastCursor = cursor
		if id, n, ok := domain.CursorSeqnum(cursor); ok && n > r.seqRead[id] {
			if _, known := r.seqRead[id]; known || len(r.seqRead) < 4096 {
				r.seqRead[id] = n
			}
		}
		if us, err := strconv.ParseInt(string(rec["__REALTIME_TIMESTAMP"]), 10, 64); err == nil {
			r.lastTime = time.UnixMicro(us)
		}
		r.mu.Unlock()
		select {
		case r.ch <- procItem{rec: rec, cursor: cursor}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	cancel()
	werr := cmd.Wait()
	if r.ctx.Err() == nil && rerr != nil && !errors.Is(rerr, context.Canceled) {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
	}
	if r.ctx.Err() == nil && ctx.Err() == nil && werr != nil {
		slog.Warn("journalctl ended; restarting it", "err", werr, "stderr", strings.TrimSpace(stderr.String()))
	}
}

// watchDir cancels the child when the followed directory is replaced
// (deleted and made again: journalctl would go on watching the old one),
// and reports new journal files that hold entries older than the read
// position.
func (r *ProcReader) watchDir(ctx context.Context, cancel context.CancelFunc) {
	ino := func() uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(r.dir, &st); err != nil {
			return 0
		}
		return st.Ino
	}
	// The directory journalctl watches, held open: once deleted its link
	// count is 0, even when a new directory at the path reuses the inode.
	fd, err := syscall.Open(r.dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err == nil {
		defer syscall.Close(fd)
	}
	deleted := func() bool {
		var st syscall.Stat_t
		return fd >= 0 && err == nil && syscall.Fstat(fd, &st) == nil && st.Nlink == 0
	}
	was := ino()
	t := time.NewTicker(dirCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := ino()
		if now == 0 {
			continue // gone for now
		}
		if now != was || deleted() {
			cancel() // the directory was replaced: start again there
			return
		}
		r.scanFiles(true)
	}
}

// scanFiles records the journal files of the directory; with report, a new
// file whose first entry is older than the read position is a gap.
func (r *ProcReader) scanFiles(report bool) {
	names, _ := filepath.Glob(filepath.Join(r.dir, "*.journal"))
	more, _ := filepath.Glob(filepath.Join(r.dir, "*", "*.journal"))
	for _, n := range append(names, more...) {
		var st syscall.Stat_t
		if syscall.Stat(n, &st) != nil {
			continue
		}
		// By inode: a file renamed when it is rotated or archived was
		// read already.
		id := fileID{dev: uint64(st.Dev), ino: st.Ino}
		if r.files[id] {
			continue
		}
		r.files[id] = true
		if !report {
			continue
		}
		head, cursor, ok := firstEntry(n)
		seqID, seq, _ := domain.CursorSeqnum(cursor)
		r.mu.Lock()
		pos := r.lastTime
		read, known := r.seqRead[seqID]
		r.mu.Unlock()
		if known && seq <= read {
			continue
		}
		if ok && !pos.IsZero() && head.Before(pos) {
			r.gap("journal file %s appeared with entries from %s, older than the read position %s: those were not read",
				filepath.Base(n), head.UTC().Format(time.RFC3339), pos.UTC().Format(time.RFC3339))
		}
	}
}

// fileID names a file by device and inode.
type fileID struct{ dev, ino uint64 }

// firstEntry is the time and cursor of the first entry of a journal file.
func firstEntry(file string) (at time.Time, cursor string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, journalctlPath, "--file="+file, "--output=export", "--no-pager", "--quiet")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return time.Time{}, "", false
	}
	if err := cmd.Start(); err != nil {
		return time.Time{}, "", false
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "__CURSOR="); found {
			cursor = v
		}
		if v, found := strings.CutPrefix(sc.Text(), "__REALTIME_TIMESTAMP="); found {
			if us, err := strconv.ParseInt(v, 10, 64); err == nil {
				at, ok = time.UnixMicro(us), true
			}
		}
		if sc.Text() == "" {
			break
		}
	}
	return at, cursor, ok
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		_, _ = l.w.Write(p[:k]) // keeps what fits; a lost stderr byte is no error
		l.n -= k
	}
	return len(p), nil
}

// ProcReader is a Journal for FollowReader.
var _ Journal = (*ProcReader)(nil)
