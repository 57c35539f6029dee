package report

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/llmfleet/analyzer/domain"
)

// Spool writes what Text or the explain JSON would for a stream of
// attempts that arrive out of start order, without holding them: each is
// rendered as it arrives into a temporary file, and only its start time,
// creation number, offset and (for text) table row stay in memory. WriteSorted
// then writes them in start order, byte for byte what Text or the JSON
// encoder writes for the sorted list.
type Spool struct {
	// Style lays the text out; set it before the first Add.
	Style Style
	json  bool
	f     *os.File
	w     *bufio.Writer
	off   int64
	// out holds an attempt's JSON (AttemptJSON.AppendJSONIndent), reused:
	// MarshalIndent allocated two buffers an attempt (5 % of explain's time
	// on a dense journal).
	out   []byte
	items []spoolItem
}

type spoolItem struct {
	at     time.Time
	seq    int
	off, n int64
	row    []string // text: the table row
	v      domain.Verdict
	para   paragraph // text: what its paragraph needs
}

// NewSpool returns a spool for format "text" or "json"; its temporary file
// is in dir ("" = os.TempDir()) and removed by Close.
func NewSpool(format, dir string) (*Spool, error) {
	f, err := os.CreateTemp(dir, "analyzer-spool-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name()) // gone once closed, even after a crash
	s := &Spool{json: format == "json", f: f, w: bufio.NewWriterSize(f, 64<<10)}
	return s, nil
}

// Add renders a, whose creation number (the order among attempts with the
// same start time) is seq.
func (s *Spool) Add(a *domain.Attempt, seq int) error {
	it := spoolItem{at: a.StartedAt, seq: seq, off: s.off, v: a.Verdict}
	var b []byte
	if s.json {
		j := a.JSON()
		var err error
		// The prefix and indent of an attempt inside {"attempts": [...]}
		// encoded with SetIndent("", " ").
		if s.out, err = j.AppendJSONIndent(s.out[:0], "  ", " "); err != nil {
			return err
		}
		b = s.out
	} else {
		it.row = Row(a)
		if a.Verdict.IsFailure() {
			b = []byte(s.Style.SectionBody(a))
			it.para = paragraphOf(a)
		}
	}
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	it.n = int64(len(b))
	s.off += it.n
	s.items = append(s.items, it)
	return nil
}

// WriteSorted writes every attempt added, in start order.
func (s *Spool) WriteSorted(w io.Writer) error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	sort.SliceStable(s.items, func(i, j int) bool {
		a, b := s.items[i], s.items[j]
		if a.at.Equal(b.at) {
			return a.seq < b.seq
		}
		return a.at.Before(b.at)
	})
	bw := bufio.NewWriterSize(w, 64<<10)
	if s.json {
		if len(s.items) == 0 {
			fmt.Fprint(bw, "{\n \"attempts\": []\n}\n")
			return bw.Flush()
		}
		fmt.Fprint(bw, "{\n \"attempts\": [\n")
		for i, it := range s.items {
			bw.WriteString("  ")
			if err := s.copy(bw, it); err != nil {
				return err
			}
			if i < len(s.items)-1 {
				bw.WriteString(",")
			}
			bw.WriteString("\n")
		}
		fmt.Fprint(bw, " ]\n}\n")
		return bw.Flush()
	}
	rows := make([][]string, len(s.items))
	for i, it := range s.items {
		rows[i] = it.row
	}
	if err := s.Style.Table(bw, rows); err != nil {
		return err
	}
	verdicts := make([]domain.Verdict, len(s.items))
	paras := make([]paragraph, len(s.items))
	for i, it := range s.items {
		verdicts[i] = it.v
		paras[i] = it.para
	}
	if err := s.Style.paragraphs(bw, paras, func(w io.Writer, i int) error { return s.copy(w, s.items[i]) }); err != nil {
		return err
	}
	fmt.Fprintf(bw, "\n%s\n", s.Style.Fold(Summary(verdicts), "  "))
	return bw.Flush()
}

func (s *Spool) copy(w io.Writer, it spoolItem) error {
	_, err := io.Copy(w, io.NewSectionReader(s.f, it.off, it.n))
	return err
}

// Close removes the temporary file.
func (s *Spool) Close() error { return s.f.Close() }
