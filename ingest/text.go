package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmfleet/analyzer/domain"
)

// readText reads plain text: every line (split on '\n') becomes an Entry with
// Cursor "SOURCE:OFFSET" (byte offset of the line start), the cleaned line as
// Message and LineTime's stamp as Time. A line longer than MaxLineBytes
// becomes several entries marked with FieldLineCapped.
func (r *run) readText() error {
	var (
		off    int64 // offset of the next unread byte
		start  int64 // offset of buf[0]
		buf    []byte
		capped bool
	)
	max := r.opt.MaxLineBytes
	if b, _ := r.br.Peek(len(bom)); bytes.Equal(b, bom) {
		_, _ = r.br.Discard(len(bom)) // byte-order mark: not part of the first line
		off, start = int64(len(bom)), int64(len(bom))
	}
	for {
		chunk, err := r.br.ReadSlice('\n')
		complete := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		switch {
		case len(chunk) == 0:
		case len(buf) == 0 && complete && len(chunk)-1 <= max:
			if e := r.textEntry(chunk[:len(chunk)-1], off, ""); e != nil {
				return e
			}
			off += int64(len(chunk))
			start = off
		default:
			off += int64(len(chunk))
			buf = append(buf, chunk...)
			content := len(buf)
			if complete {
				content--
			}
			for content > max {
				cut := max
				for cut > max-utf8.UTFMax && cut > 0 && !utf8.RuneStart(buf[cut]) {
					cut--
				}
				mark := "line longer than " + strconv.Itoa(max) + " bytes, split into several entries"
				if e := r.textEntry(buf[:cut], start, mark); e != nil {
					return e
				}
				buf = append(buf[:0], buf[cut:]...)
				start += int64(cut)
				content -= cut
				capped = true
			}
			if complete {
				mark := ""
				if capped {
					mark = "end of a line longer than " + strconv.Itoa(max) + " bytes"
				}
				if e := r.textEntry(buf[:content], start, mark); e != nil {
					return e
				}
				buf, capped, start = buf[:0], false, off
			}
		}
		switch {
		case err == nil, err == bufio.ErrBufferFull:
		case err == io.EOF:
			if len(buf) > 0 {
				mark := ""
				if capped {
					mark = "end of a line longer than " + strconv.Itoa(max) + " bytes"
				}
				if e := r.textEntry(buf, start, mark); e != nil {
					return e
				}
			}
			if r.st.Records > 0 && r.logLike == 0 {
				return fmt.Errorf("%w: no line of its %d has a timestamp, a log level, a process prefix or engine output; %s",
					ErrNotALog, r.st.Records, expected)
			}
			return nil
		default:
			return err
		}
	}
}

// textEntry emits one text line starting at byte offset off.
func (r *run) textEntry(line []byte, off int64, mark string) error {
	if err := r.tick(); err != nil {
		return err
	}
	e := domain.Entry{
		Cursor:  r.source + ":" + strconv.FormatInt(off, 10),
		Source:  r.source,
		Message: CleanMessage(line),
	}
	if !strings.HasPrefix(mark, "end of") { // a continuation has no envelope
		if r.paste == nil {
			r.paste = newPasteReader(r.source)
		}
		ok := r.paste.read(e.Message, &e)
		if r.logLike == 0 && (!e.Time.IsZero() || e.Host != "" || e.Unit != "" || logLike().MatchString(e.Message)) {
			r.logLike++
		}
		for i, b := range r.paste.before {
			b.Cursor = e.Cursor + "#" + strconv.Itoa(i)
			if b.Source == "" {
				b.Source = r.source
			}
			if err := r.emit(b); err != nil {
				return err
			}
		}
		if !ok {
			return nil
		}
		if e.Time.IsZero() {
			if t, ok := LineTime(e.Message); ok {
				e.Time = t
			}
		}
	}
	if mark != "" {
		e.Fields = map[string]string{FieldLineCapped: mark}
	}
	return r.emit(e)
}

// logLike matches a line that looks like log output: a log level, a
// timestamp the other checks missed, a process or source prefix, key=value
// pairs, a crash, or llama.cpp's own prefix (common/log.cpp: elapsed
// minutes.seconds.milliseconds.microseconds and a level letter,
// "0.00.651.452 I ").
var logLike = lazyRegexp(`^\d+\.\d\d\.\d{3}\.\d{3} [IWEDT] |(?i)\b(?:debug|dbg|info|inf|warn(?:ing)?|wrn|error|err|critical|fatal|ftl|trace|notice)\b|Traceback|Exception|\w(?:Error|Exit):|panic:|Segmentation fault|File "[^"]+", line \d+|^\S+\[\d+\]:|^[\w.-]+: |\[[^\]]+\]|\w=\S|"\w+":|\d\d:\d\d:\d\d|\d:\d\d ?[AP]M`)

// LineTime parses a timestamp at the start of a log line, after optional
// blanks, a docker-compose prefix ("vllm-1  | "), "time=" (logfmt) and "[".
// Recognised: YYYY-MM-DD or YYYY/MM/DD, then 'T' or ' ', hh:mm:ss, optional
// fraction ('.' or ','), optional zone (Z, ±hh:mm, ±hhmm, ±hh); no zone means
// time.Local. Forms without a year (vLLM's "INFO 10-01 21:40:04", syslog's
// "Oct  1 ...") are not recognised: no year is invented.
func LineTime(line string) (time.Time, bool) {
	s := strings.TrimLeft(line, " \t")
	if _, rest, ok := domain.SplitCompose(s); ok {
		s = strings.TrimLeft(rest, " \t")
	}
	s = strings.TrimPrefix(s, "time=")
	s = strings.TrimPrefix(s, "\"")
	s = strings.TrimPrefix(s, "[")
	return parseStamp(s)
}

// digitsAt reads s[a:b] as a decimal number; false when it is out of range
// or not all digits.
func digitsAt(s string, a, b int) (int, bool) {
	if b > len(s) {
		return 0, false
	}
	n := 0
	for i := a; i < b; i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// parseStamp parses the timestamp forms of LineTime at the start of s.
func parseStamp(s string) (time.Time, bool) {
	if len(s) < 19 {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) { return digitsAt(s, a, b) }
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	sep := s[4]
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || (sep != '-' && sep != '/') || s[7] != sep ||
		(s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	if year < 1970 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return time.Time{}, false
	}
	i, nsec := 19, 0
	if i < len(s) && (s[i] == '.' || s[i] == ',') && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
		i++
		scale := 100000000
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			nsec += int(s[i]-'0') * scale
			scale /= 10
		}
	}
	loc := time.Local
	if i < len(s) {
		switch c := s[i]; {
		case c == 'Z':
			loc = time.UTC
			i++
		case c == '+' || c == '-':
			if off, n, ok := parseZone(s[i:]); ok {
				loc = time.FixedZone("", off)
				i += n
			}
		}
	}
	if i < len(s) && s[i] >= '0' && s[i] <= '9' {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, loc)
	if t.Day() != day { // 2026-02-31
		return time.Time{}, false
	}
	return t, true
}

// parseZone parses ±hh:mm, ±hhmm or ±hh; it returns the offset in seconds
// and the bytes used.
func parseZone(s string) (int, int, bool) {
	digits := func(a, b int) (int, bool) { return digitsAt(s, a, b) }
	h, ok := digits(1, 3)
	if !ok || h > 14 {
		return 0, 0, false
	}
	m, used := 0, 3
	if len(s) > 3 && s[3] == ':' {
		if m, ok = digits(4, 6); !ok {
			return 0, 0, false
		}
		used = 6
	} else if mm, ok := digits(3, 5); ok {
		m, used = mm, 5
	}
	if m > 59 {
		return 0, 0, false
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, used, true
}
