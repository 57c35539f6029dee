package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/llmfleet/analyzer/domain"
	"github.com/ulikunitz/xz"
)

// xzTool compresses data with the xz command (xz-utils), the writer most
// .xz files come from.
func xzTool(t testing.TB, data []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("xz", append([]string{"-c"}, args...)...)
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("xz %v: %v", args, err)
	}
	return out
}

func readXZ(data []byte) ([]byte, error) {
	x, err := newXZReader(bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(x)
}

// TestXZReadsWhatXZWrites: every check type, presets up to -9e, many
// blocks (multi-threaded xz), concatenated streams with stream padding, and
// the Go module's own writer.
func TestXZReadsWhatXZWrites(t *testing.T) {
	plain := fixtureBytes(t, "dankclaw-day")
	cases := map[string][]byte{}
	for _, args := range [][]string{{"-0"}, {"-6"}, {"-9e"}, {"--check=none"}, {"--check=crc32"},
		{"--check=sha256"}, {"-T2", "--block-size=65536"}} {
		cases[strings.Join(args, " ")] = xzTool(t, plain, args...)
	}
	half := len(plain) / 2
	cases["two streams and padding"] = append(append(xzTool(t, plain[:half]), 0, 0, 0, 0), xzTool(t, plain[half:])...)
	var w bytes.Buffer
	zw, err := xz.NewWriter(&w)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(plain)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	cases["ulikunitz writer"] = w.Bytes()
	for name, data := range cases {
		got, err := readXZ(data)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%s: %d of %d bytes, %v", name, len(got), len(plain), err)
		}
	}
	// A flipped byte in the data fails the block's check or the decoder.
	bad := append([]byte{}, cases["-6"]...)
	bad[len(bad)/2] ^= 0x55
	if _, err := readXZ(bad); err == nil {
		t.Error("a corrupt block was read without an error")
	}
	if _, err := readXZ(cases["-6"][:len(cases["-6"])-3]); err == nil {
		t.Error("a cut stream was read without an error")
	}
}

// TestXZRefusesHugeDictionary is the reviewer's case: a small file whose
// block header declares a 4 GiB dictionary is refused with a clear error,
// before anything of that size is allocated.
func TestXZRefusesHugeDictionary(t *testing.T) {
	data := xzTool(t, fixtureBytes(t, "dankclaw-day"), "-6")
	// The first block header follows the 12-byte stream header: its size
	// byte, flags, the LZMA2 filter (id 0x21, props size 1, dictionary
	// byte), padding, CRC32.
	h := data[12 : 12+int(data[12]+1)*4]
	if h[2] != 0x21 || h[3] != 1 {
		t.Fatalf("unexpected block header % x", h)
	}
	h[4] = 40 // 4 GiB - 1
	binary.LittleEndian.PutUint32(h[len(h)-4:], crc32.ChecksumIEEE(h[:len(h)-4]))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, st := readAllErr(data)
	runtime.ReadMemStats(&after)
	if st == nil || !strings.Contains(st.Error(), "dictionary") {
		t.Fatalf("err = %v, want the dictionary named", st)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("refusing it allocated %d MiB", grew>>20)
	}
	h[4] = 27 // 48 MiB: within the cap, read as usual
	binary.LittleEndian.PutUint32(h[len(h)-4:], crc32.ChecksumIEEE(h[:len(h)-4]))
	if _, err := readXZ(data); err != nil {
		t.Errorf("a 48 MiB dictionary: %v", err)
	}
}

func readAllErr(data []byte) (int, error) {
	n := 0
	_, err := Read(context.Background(), bytes.NewReader(data), "x.xz", Options{}, func(domain.Entry) error { n++; return nil })
	return n, err
}

// FuzzXZ: xzReader never panics, and what it reads whole equals what the
// Go module's reader reads.
func FuzzXZ(f *testing.F) {
	plain := []byte("INFO 10-01 09:00:00 a line\nERROR 10-01 09:00:01 another\n")
	f.Add(xzTool(f, plain, "-0"))
	f.Add(xzTool(f, plain, "--check=sha256"))
	f.Add(xzTool(f, plain, "-T2", "--block-size=16"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readXZ(data)
		if err != nil {
			return
		}
		zr, zerr := xz.NewReader(bytes.NewReader(data))
		if zerr != nil {
			return
		}
		want, zerr := io.ReadAll(zr)
		if zerr == nil && !bytes.Equal(got, want) {
			t.Fatalf("xzReader read %d bytes, the Go module %d", len(got), len(want))
		}
	})
}
