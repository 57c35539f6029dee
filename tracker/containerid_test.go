package tracker

import (
	"strings"
	"testing"
)

// TestContainerIDLine: the first-byte shortcut answers as trimming every
// message would, for an id with each kind of white space around it (the
// Unicode ones start with a non-ASCII byte) and for messages that only
// look like one.
func TestContainerIDLine(t *testing.T) {
	id := strings.Repeat("0123456789abcdef", 4)
	reference := func(msg string) (string, bool) {
		s := strings.TrimSpace(msg)
		return s, len(msg) >= 64 && len(s) == 64 && isHex(s)
	}
	var msgs []string
	for _, space := range []string{"", " ", "\t", "\n", "\v", "\f", "\r", "\u0085", "\u00a0", "\u2003", "\u3000", "x", "-"} {
		msgs = append(msgs, space+id, id+space, space+id+space, space+space+id, space+"  "+id[1:])
	}
	msgs = append(msgs, "", "a", id[:63], id+"0", strings.ToUpper(id), "INFO "+id, strings.Repeat("f", 64), strings.Repeat("g", 64))
	found := 0
	for _, m := range msgs {
		got, ok := containerIDLine(m)
		want, wantOK := reference(m)
		if ok != wantOK || ok && got != want {
			t.Errorf("containerIDLine(%q) = %q, %v; trimming gives %q, %v", m, got, ok, want, wantOK)
		}
		if ok {
			found++
		}
	}
	if found < 25 {
		t.Errorf("%d ids found: the test does not exercise the white space", found)
	}
}
