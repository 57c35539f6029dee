package ingest

import (
	"bufio"
	"encoding/binary"
	"io"
	"sort"
	"strings"
)

// WriteExport writes one record in journal export format
// (https://systemd.io/JOURNAL_EXPORT_FORMATS/), the input of
// systemd-journal-remote: "KEY=value" lines, or for a value holding a
// newline or non-text bytes the binary form "KEY\n" + 64-bit little-endian
// length + bytes + "\n"; an empty line ends the record. Fields with a nil
// value (JSON null) are left out; __CURSOR is left out (the receiver
// assigns its own). Address fields (__REALTIME_TIMESTAMP, ...) come first.
func WriteExport(w *bufio.Writer, rec Record) error {
	keys := make([]string, 0, len(rec))
	for k, v := range rec {
		if v == nil || k == "__CURSOR" {
			continue
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ai, aj := strings.HasPrefix(keys[i], "__"), strings.HasPrefix(keys[j], "__")
		if ai != aj {
			return ai
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		v := rec[k]
		if needsBinary(v) {
			var n [8]byte
			binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
			w.WriteString(k)
			w.WriteByte('\n')
			w.Write(n[:])
			w.Write(v)
			w.WriteByte('\n')
			continue
		}
		w.WriteString(k)
		w.WriteByte('=')
		w.Write(v)
		w.WriteByte('\n')
	}
	return w.WriteByte('\n')
}

func needsBinary(v []byte) bool {
	for _, c := range v {
		if c == '\n' || c < 0x20 && c != '\t' || c == 0x7f {
			return true
		}
	}
	return false
}

// CopyJSONToExport converts journalctl -o json lines from r to export
// format on w (what systemd-journal-remote reads); malformed lines are
// skipped. It returns the number of records written.
func CopyJSONToExport(w io.Writer, r io.Reader) (int, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	bw := bufio.NewWriterSize(w, 1<<20)
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			if rec, perr := ParseJSONRecord(line); perr == nil {
				if werr := WriteExport(bw, rec); werr != nil {
					return n, werr
				}
				n++
			}
		}
		if err == io.EOF {
			return n, bw.Flush()
		}
		if err != nil {
			return n, err
		}
	}
}
