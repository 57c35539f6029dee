package domain

import (
	"fmt"
	"strings"
	"testing"
)

func TestCursorSeqnum(t *testing.T) {
	for _, tc := range []struct {
		cursor string
		id     string
		n      uint64
		ok     bool
	}{
		{"s=739ad463348b4ceca5a9e69c95a3c93d;i=4ece7;b=6c7c6013a8f2401b8f0f1a5f2a8b0a83;m=10b8b4fb5;t=5c9c5a4e1f3a2;x=f9c1a2d3e4b5a6c7", "739ad463348b4ceca5a9e69c95a3c93d", 0x4ece7, true},
		{"i=10;s=abc", "abc", 16, true},
		{"s=abc;i=zz", "", 0, false},                 // not hexadecimal
		{"s=abc;b=1", "", 0, false},                  // no sequence number
		{"i=1", "", 0, false},                        // no sequence number id
		{"s=abc;i=ffffffffffffffffff", "", 0, false}, // over 64 bits
		{"text:/var/log/vllm.log:120", "", 0, false}, // a text file's position
		{"", "", 0, false},
	} {
		id, n, ok := CursorSeqnum(tc.cursor)
		if id != tc.id || n != tc.n || ok != tc.ok {
			t.Errorf("CursorSeqnum(%q) = %q, %d, %v; want %q, %d, %v", tc.cursor, id, n, ok, tc.id, tc.n, tc.ok)
		}
	}
}

// FuzzCursorSeqnum: any cursor is read without panicking, and what is read
// comes back from the cursor journald would write with it.
func FuzzCursorSeqnum(f *testing.F) {
	f.Add("s=739ad463348b4ceca5a9e69c95a3c93d;i=4ece7;b=6c7c;m=10b8;t=5c9c;x=f9c1")
	f.Add("s=;i=;")
	f.Add(";;;s=a;;i=0")
	f.Fuzz(func(t *testing.T, cursor string) {
		id, n, ok := CursorSeqnum(cursor)
		if !ok {
			return
		}
		if strings.ContainsRune(id, ';') || id == "" {
			t.Fatalf("id %q", id)
		}
		id2, n2, ok2 := CursorSeqnum(fmt.Sprintf("s=%s;i=%x", id, n))
		if !ok2 || id2 != id || n2 != n {
			t.Fatalf("%q: %q %d, written back: %q %d %v", cursor, id, n, id2, n2, ok2)
		}
	})
}
