package domain

import (
	"strconv"
	"strings"
)

// CursorSeqnum reads the sequence number id (s=) and sequence number (i=,
// hexadecimal) of a journald cursor ("s=…;i=…;b=…;m=…;t=…;x=…", see
// sd_journal_get_cursor(3)); ok is false for anything else. journald
// numbers a journal's entries in the order it writes them, so two cursors
// with one id are in that order by their numbers.
func CursorSeqnum(cursor string) (id string, n uint64, ok bool) {
	var haveN bool
	for len(cursor) > 0 {
		part := cursor
		if i := strings.IndexByte(cursor, ';'); i >= 0 {
			part, cursor = cursor[:i], cursor[i+1:]
		} else {
			cursor = ""
		}
		switch {
		case strings.HasPrefix(part, "s="):
			id = part[2:]
		case strings.HasPrefix(part, "i="):
			v, err := strconv.ParseUint(part[2:], 16, 64)
			if err != nil {
				return "", 0, false
			}
			n, haveN = v, true
		}
	}
	if id == "" || !haveN {
		return "", 0, false
	}
	return id, n, true
}
