package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"strconv"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// A binary journal file (systemd's on-disk format: systemd.io/JOURNAL_FILE_FORMAT,
// src/libsystemd/sd-journal/journal-def.h) is read as a stream, object by
// object from the header to the last object (the header's
// tail_object_offset), as journald and systemd-journal-remote append them:
// an entry's DATA objects ("NAME=value", each stored once and shared by
// every entry that has it) come before the ENTRY object that lists their
// offsets. A DATA object is kept, decoded, until as many entries as its
// n_entries counter says have used it, so a file of any size is read
// with the memory of its shared values (the host, the unit, repeated
// messages) and of one entry. The entry array, the hash tables and the
// FIELD and TAG objects are skipped: reading in file order needs none of
// them. Each entry becomes the record journalctl -o json prints for it:
// its DATA fields, and __CURSOR, __REALTIME_TIMESTAMP,
// __MONOTONIC_TIMESTAMP and _BOOT_ID from the entry object.
//
// Every offset and size is checked against what has been read; a bad
// object is counted as malformed and skipped by its size, and an object
// whose size cannot be trusted ends the read with the entries so far.
const (
	journalHeaderMin   = 208 // the header through tail_entry_monotonic (systemd 187 on)
	journalHeaderMax   = 1 << 12
	journalObjHeader   = 16 // type, flags, reserved[6], le64 size
	journalDataRegular = 64 // object header + hash, next_hash, next_field, entry, entry_array, n_entries
	journalDataCompact = 72 // + le32 tail_entry_array_offset, le32 tail_entry_array_n_entries
	journalEntryFixed  = 64 // object header + seqnum, realtime, monotonic, boot_id[16], xor_hash

	journalObjData  = 1
	journalObjEntry = 3

	// Header incompatible_flags.
	journalCompressedXZ   = 1 << 0
	journalCompressedLZ4  = 1 << 1
	journalKeyedHash      = 1 << 2
	journalCompressedZSTD = 1 << 3
	journalCompact        = 1 << 4
	journalKnownFlags     = journalCompressedXZ | journalCompressedLZ4 | journalKeyedHash | journalCompressedZSTD | journalCompact

	// DATA object flags.
	journalObjXZ   = 1 << 0
	journalObjLZ4  = 1 << 1
	journalObjZSTD = 1 << 2

	// journalKeptMax caps the bytes of DATA values kept for entries still
	// to come: a file whose counters claim every value is shared, or that
	// holds values no entry uses, must not take memory without bound. Past
	// it, the values kept are dropped (counted as malformed).
	journalKeptMax = 32 << 20

	// journalFreshMax is how many values of one entry alone wait for it
	// outside the map (see journalReader.lookup).
	journalFreshMax = 64

	// journalSeekMin is the least skip that seeks instead of reading.
	journalSeekMin = 64 << 10

	// journalArenaMax is the size past which the arena of those values is
	// emptied even while some still wait.
	journalArenaMax = 1 << 20
)

// journalData is one DATA object, decoded.
type journalData struct {
	name string
	slot int8
	kept bool
	val  []byte
	left uint64 // entries still to use it (n_entries minus those read)
	boot bool   // _BOOT_ID
}

// journalItem is an entry's reference to a DATA object, as last resolved.
type journalItem struct {
	off  uint64
	d    *journalData
	uses uint64 // entries in a row that had it, not yet taken from d.left
	boot bool   // d.boot
}

// journalReader holds the state of one journal file's read.
type journalReader struct {
	r          *run
	asm        *Assembler
	off        uint64 // file offset of the next unread byte
	compact    bool
	seqnumID   [16]byte
	data       map[uint64]*journalData // DATA objects entries will still use
	keptSize   int                     // bytes of values in data
	fresh      []journalItem           // data objects of n_entries 1 not used yet (see lookup)
	arena      []byte                  // their values, until no fresh object is left
	items      []journalItem           // the last entry's items: the next one mostly repeats them
	itemsWhole bool                    // the record still starts with items' fields (none was missing)
	cursorHead []byte                  // "s=SEQNUM_ID;i="
	boot       [16]byte                // the last entry's boot ID
	bootHex    []byte                  // and in hex
	buf        []byte                  // the entry object being read
	scratch    []byte                  // the entry's synthesized values
	rec        flatRecord
	zstd       *zstd.Decoder
	seeker     io.Seeker // the file, when skip may seek in it
	size       uint64    // the file's size when it is known, else 0
	synthFixed bool      // no synthesized field goes to Entry.Fields (__CURSOR, __REALTIME_TIMESTAMP are members)
	synth      [4]struct {
		slot int8
		kept bool
	}
}

// synthesized are the fields of a journalctl -o json record that come
// from the entry object instead of a DATA object.
var synthesized = [4]string{"__CURSOR", "__REALTIME_TIMESTAMP", "__MONOTONIC_TIMESTAMP", "_BOOT_ID"}

// readJournal reads r.br, which starts with journalMagic.
func (r *run) readJournal() error {
	jr := &journalReader{r: r, asm: NewAssembler(r.source, r.opt), data: map[uint64]*journalData{}}
	for i, name := range synthesized {
		slot := jr.asm.keep.slot(name)
		jr.synth[i].slot, jr.synth[i].kept = slot, jr.asm.keep.inFields(name, slot)
	}
	jr.synthFixed = !jr.synth[2].kept && !jr.synth[3].kept // the monotonic time and the boot ID stay out of Entry.Fields
	if r.rw.src == io.Reader(r.cr) {
		// Not decompressed: seekable when the file is (see skip).
		jr.seeker, _ = r.cr.r.(io.Seeker)
		if f, ok := r.cr.r.(interface{ Stat() (os.FileInfo, error) }); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				jr.size = uint64(fi.Size())
			}
		}
	}
	defer func() {
		if jr.zstd != nil {
			jr.zstd.Close()
		}
	}()
	if err := jr.read(); err != nil {
		return err
	}
	return r.flush(jr.asm)
}

func (jr *journalReader) read() error {
	tail, err := jr.header()
	if err != nil {
		return err
	}
	var hdr [journalObjHeader]byte
	for jr.off <= tail {
		at := jr.off
		if err := jr.readFull(hdr[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				jr.r.malformed("%s: the file ends at byte %d, before its last object (byte %d)", jr.r.source, at, tail)
				return nil
			}
			return err
		}
		typ, flags := hdr[0], hdr[1]
		size := binary.LittleEndian.Uint64(hdr[8:])
		if size < journalObjHeader || at+size < at {
			// Without a size nothing after this object can be found.
			jr.r.malformed("%s: object at byte %d has size %d: the rest of the file is not read", jr.r.source, at, size)
			return nil
		}
		body := size - journalObjHeader
		var err error
		switch typ {
		case journalObjData:
			err = jr.dataObject(at, flags, body)
		case journalObjEntry:
			err = jr.entryObject(at, body)
		default:
			err = jr.skip(body)
		}
		if err != nil {
			return err
		}
		if pad := (8 - size%8) % 8; pad > 0 {
			if err := jr.skip(pad); err != nil {
				return err
			}
		}
	}
	return nil
}

// header reads the file header and returns the offset of the last object
// (0 for a file without one).
func (jr *journalReader) header() (tail uint64, err error) {
	h := make([]byte, journalHeaderMin)
	if err := jr.readFull(h); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, fmt.Errorf("ingest: journal file header cut short (%d bytes at most)", journalHeaderMin)
		}
		return 0, err
	}
	jr.off = journalHeaderMin
	incompat := binary.LittleEndian.Uint32(h[12:])
	if incompat&^journalKnownFlags != 0 {
		return 0, fmt.Errorf("ingest: journal file with unknown incompatible features 0x%x (convert it with journalctl --file=FILE -o export)", incompat)
	}
	jr.compact = incompat&journalCompact != 0
	copy(jr.seqnumID[:], h[72:88])
	size := binary.LittleEndian.Uint64(h[88:])
	if size < journalHeaderMin || size > journalHeaderMax || size%8 != 0 {
		return 0, fmt.Errorf("ingest: journal file header of %d bytes (want %d to %d, a multiple of 8)", size, journalHeaderMin, journalHeaderMax)
	}
	if err := jr.skip(size - journalHeaderMin); err != nil {
		return 0, err
	}
	tail = binary.LittleEndian.Uint64(h[136:])
	if tail != 0 && tail < size {
		return 0, fmt.Errorf("ingest: journal file's last object at byte %d, inside its %d-byte header", tail, size)
	}
	return tail, nil
}

// skip passes over n bytes of the file: by seeking when the file is
// seekable and n is large (a journal file's entry arrays and hash tables,
// ~40 % of its bytes, need not be read at all), else by reading them.
func (jr *journalReader) skip(n uint64) error {
	// Not past the file's end: reading to it finds where it is.
	if held := uint64(jr.r.br.Buffered()); n >= journalSeekMin && n > held && jr.seeker != nil && len(jr.r.rw.pending) == 0 &&
		(jr.size == 0 || jr.off+n <= jr.size) {
		if rest := n - held; rest <= math.MaxInt32 {
			if _, err := jr.seeker.Seek(int64(rest), io.SeekCurrent); err == nil {
				jr.r.br.Reset(jr.r.rw) // drops the held bytes, the skip's first
				jr.r.cr.n += int64(rest)
				jr.off += n
				return nil
			}
		}
	}
	for n > 0 {
		step := int(min(n, 1<<30))
		got, err := jr.r.br.Discard(step)
		jr.off += uint64(got)
		n -= uint64(got)
		if err != nil {
			if err == io.EOF {
				return nil // the loop's next read reports the cut
			}
			return err
		}
	}
	return nil
}

// readFull reads len(b) bytes into b as io.ReadFull does, and counts them.
func (jr *journalReader) readFull(b []byte) error {
	n, err := io.ReadFull(jr.r.br, b)
	jr.off += uint64(n)
	return err
}

// dataObject reads a DATA object's body (body bytes after its header).
func (jr *journalReader) dataObject(at uint64, flags byte, body uint64) error {
	fixed := uint64(journalDataRegular - journalObjHeader)
	if jr.compact {
		fixed = journalDataCompact - journalObjHeader
	}
	if body < fixed || body-fixed > uint64(jr.r.recordCap) {
		jr.r.malformed("%s: data object at byte %d of %d bytes (%d at most): skipped", jr.r.source, at, body+journalObjHeader, uint64(jr.r.recordCap)+fixed+journalObjHeader)
		return jr.skip(body)
	}
	var head [journalDataCompact - journalObjHeader]byte
	if err := jr.readFull(head[:fixed]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		return err
	}
	nEntries := binary.LittleEndian.Uint64(head[40:48])
	var payload []byte
	var err error
	switch n := body - fixed; {
	case nEntries == 1 && len(jr.fresh) < journalFreshMax && n <= readBufSize:
		// A value of one entry alone is read into the arena its entry
		// empties (see entryObject).
		start := len(jr.arena)
		jr.arena = slices.Grow(jr.arena, int(n))[:start+int(n)]
		payload = jr.arena[start:]
		err = jr.readFull(payload)
	default:
		payload, err = jr.readBody(n)
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil // the file ends inside the object: the next read reports it
	}
	if err != nil {
		return err
	}
	if flags&(journalObjXZ|journalObjLZ4|journalObjZSTD) != 0 {
		if payload, err = jr.decompress(flags, payload); err != nil {
			jr.r.malformed("%s: data object at byte %d: %v", jr.r.source, at, err)
			return nil
		}
	}
	eq := bytes.IndexByte(payload, '=')
	if eq <= 0 || nEntries == 0 {
		if eq <= 0 {
			jr.r.malformed("%s: data object at byte %d is no NAME=value", jr.r.source, at)
		}
		return nil
	}
	if jr.keptSize+len(payload) > journalKeptMax {
		jr.r.malformed("%s: data object at byte %d: the values kept for later entries pass %d MiB; dropped (later entries may lack fields)", jr.r.source, at, journalKeptMax>>20)
		clear(jr.data)
		jr.items, jr.itemsWhole, jr.fresh, jr.keptSize = jr.items[:0], false, jr.fresh[:0], 0
	}
	fresh := nEntries == 1 && len(jr.fresh) < journalFreshMax
	name := fieldName(payload[:eq])
	slot := jr.asm.keep.slot(name)
	d := &journalData{name: name, slot: slot, kept: jr.asm.keep.inFields(name, slot), val: payload[eq+1:], left: nEntries,
		boot: name == "_BOOT_ID"}
	if fresh {
		jr.fresh = append(jr.fresh, journalItem{off: at, d: d})
	} else {
		jr.data[at] = d
	}
	jr.keptSize += len(payload)
	return nil
}

// readBody reads the n bytes of an object's body into a new buffer of its
// own; io.EOF or io.ErrUnexpectedEOF when the file ends first. A body of
// more than what the read buffer holds is read into a buffer that grows
// as bytes arrive: a size the file does not hold costs no memory.
func (jr *journalReader) readBody(n uint64) ([]byte, error) {
	if n <= readBufSize {
		b := make([]byte, n)
		if err := jr.readFull(b); err != nil {
			return nil, err
		}
		return b, nil
	}
	var buf bytes.Buffer
	got, err := io.CopyN(&buf, jr.r.br, int64(n))
	jr.off += uint64(got)
	if err == io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	return buf.Bytes(), err
}

// lz4Blob decodes an LZ4-compressed DATA payload as systemd writes one
// (src/basic/compress.c: the decoded size as a little-endian 64-bit
// number, then one LZ4 block), up to limit bytes. LZ4 writes at most 255
// bytes for one it reads, so a size past that ratio is refused before
// its buffer is allocated.
func lz4Blob(payload []byte, limit int64) ([]byte, error) {
	if len(payload) < 8 {
		return nil, errors.New("LZ4 data object shorter than its size")
	}
	size := binary.LittleEndian.Uint64(payload)
	if size > uint64(limit) || size > 255*uint64(len(payload))+16 {
		return nil, fmt.Errorf("LZ4 data object of %d bytes claims %d decompressed (%d at most)", len(payload), size, min(uint64(limit), 255*uint64(len(payload))+16))
	}
	out := make([]byte, size)
	n, err := lz4.UncompressBlock(payload[8:], out)
	if err != nil {
		return nil, fmt.Errorf("lz4: %w", err)
	}
	return out[:n], nil
}

// decompress returns a compressed DATA payload decoded, up to the record cap.
func (jr *journalReader) decompress(flags byte, payload []byte) ([]byte, error) {
	limit := int64(jr.r.recordCap)
	var src io.Reader
	switch {
	case flags&journalObjZSTD != 0:
		if jr.zstd == nil {
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(zstdMaxMemory),
				zstd.WithDecoderMaxWindow(zstdMaxMemory))
			if err != nil {
				return nil, err
			}
			jr.zstd = d
		}
		if err := jr.zstd.Reset(bytes.NewReader(payload)); err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		src = jr.zstd
	case flags&journalObjXZ != 0:
		x, err := newXZReader(bufio.NewReader(bytes.NewReader(payload)))
		if err != nil {
			return nil, err
		}
		src = x
	default:
		return lz4Blob(payload, limit)
	}
	out, err := io.ReadAll(io.LimitReader(src, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("more than %d bytes once decompressed", limit)
	}
	return out, nil
}

// entryObject reads an ENTRY object's body and pushes its record.
func (jr *journalReader) entryObject(at uint64, body uint64) error {
	itemSize := uint64(16)
	if jr.compact {
		itemSize = 4
	}
	fixed := uint64(journalEntryFixed - journalObjHeader)
	if body < fixed || (body-fixed)%itemSize != 0 || (body-fixed)/itemSize > maxRecordFields {
		jr.r.malformed("%s: entry object at byte %d of %d bytes: skipped", jr.r.source, at, body+journalObjHeader)
		return jr.skip(body)
	}
	if uint64(cap(jr.buf)) < body {
		jr.buf = make([]byte, body)
	}
	b := jr.buf[:body]
	if err := jr.readFull(b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		return err
	}
	le := binary.LittleEndian
	seqnum, realtime, monotonic := le.Uint64(b[0:]), le.Uint64(b[8:]), le.Uint64(b[16:])
	bootID, xor := b[24:40], le.Uint64(b[40:])

	rec := &jr.rec
	prevGen := rec.gen
	rec.reset()
	itemOff := func(p uint64) uint64 {
		if jr.compact {
			return uint64(le.Uint32(b[p:]))
		}
		return le.Uint64(b[p:])
	}
	// The items the last entry began with are still the record's first
	// fields (reset keeps the arrays) and jr.items' first: take them in
	// place, as the JSON reader takes a run of members it has seen
	// (copying pointers costs write barriers), and count their use there.
	items := jr.items
	p, j := fixed, 0
	if jr.itemsWhole {
		// Not a value of one entry alone (d.left 0 once used): its arena
		// may hold the next entry's values by now. A file whose counts
		// are wrong then finds it missing, as anywhere else in the entry.
		for ; j < len(items) && p < body && itemOff(p) == items[j].off && items[j].d.left > 0; j, p = j+1, p+itemSize {
			items[j].uses++
		}
		rec.names, rec.slots, rec.kept, rec.vals = rec.names[:j], rec.slots[:j], rec.kept[:j], rec.vals[:j]
		for k, slot := range rec.slots {
			if slot > slotNone {
				rec.at[slot] = int32(k + 1)
			}
		}
	}
	// Whether the fields that go to Entry.Fields are the last record's:
	// the items that changed hold none of them (nor do the synthesized
	// fields, which change with every entry).
	keptSame := jr.itemsWhole && jr.synthFixed
	for _, it := range items[j:] {
		keptSame = keptSame && !it.d.kept
		jr.settle(it)
	}
	items = items[:j]
	missing := 0
	for ; p < body; p += itemSize {
		o := itemOff(p)
		d := jr.lookup(o)
		if d == nil {
			missing++
			continue
		}
		keptSame = keptSame && !d.kept
		items = append(items, journalItem{off: o, d: d, uses: 1, boot: d.boot})
		rec.add(d.name, d.slot, d.kept, d.val)
	}
	if keptSame && missing == 0 {
		rec.keptFrom = prevGen
	}
	jr.items, jr.itemsWhole = items, missing == 0
	if missing > 0 {
		jr.r.malformed("%s: entry object at byte %d: %d of its fields are not in the file before it", jr.r.source, at, missing)
	}
	boot := false
	for _, it := range items {
		boot = boot || it.boot
	}

	// __CURSOR as sd_journal_get_cursor(3) words it, then the times and
	// the boot ID journalctl -o json prints.
	if jr.cursorHead == nil {
		jr.cursorHead = hex.AppendEncode([]byte("s="), jr.seqnumID[:])
		jr.cursorHead = append(jr.cursorHead, ";i="...)
	}
	if !bytes.Equal(jr.boot[:], bootID) || jr.bootHex == nil {
		copy(jr.boot[:], bootID)
		jr.bootHex = hex.AppendEncode(jr.bootHex[:0], bootID)
	}
	s := append(jr.scratch[:0], jr.cursorHead...)
	s = appendHex(s, seqnum)
	s = append(s, ";b="...)
	s = append(s, jr.bootHex...)
	s = append(s, ";m="...)
	s = appendHex(s, monotonic)
	s = append(s, ";t="...)
	s = appendHex(s, realtime)
	s = append(s, ";x="...)
	s = appendHex(s, xor)
	c := len(s)
	s = strconv.AppendUint(s, realtime, 10)
	rt := len(s)
	s = strconv.AppendUint(s, monotonic, 10)
	jr.scratch = s
	jr.synthField(0, s[:c:c])
	jr.synthField(1, s[c:rt:rt])
	if jr.synth[1].slot == slotRealtime && realtime <= math.MaxInt64 {
		rec.realtime, rec.realtimeOK = int64(realtime), true
	}
	jr.synthField(2, s[rt:])
	if !boot {
		jr.synthField(3, jr.bootHex)
	}
	if err := jr.r.pushFlat(jr.asm, rec); err != nil {
		return err
	}
	// The entry's own values are in the Entry now (normalize copies them;
	// a partial line's record is cloned): their arena is free, once no
	// value in it waits for an entry still. Values that wait too long
	// (no entry of the file uses them) move out of it.
	if len(jr.fresh) > 0 && len(jr.arena) > journalArenaMax {
		for _, it := range jr.fresh {
			it.d.val = bytes.Clone(it.d.val)
		}
		jr.arena = jr.arena[:0]
	}
	if len(jr.fresh) == 0 {
		jr.arena = jr.arena[:0]
	}
	return nil
}

// lookup returns the data object at offset o, nil when none was read.
// One entry's own values, used by it alone, are the last objects before
// it: they are looked for first in fresh, and taken out of it.
func (jr *journalReader) lookup(o uint64) *journalData {
	for i := len(jr.fresh) - 1; i >= 0; i-- {
		if it := jr.fresh[i]; it.off == o {
			jr.fresh = slices.Delete(jr.fresh, i, i+1)
			jr.keptSize -= len(it.d.name) + 1 + len(it.d.val)
			it.d.left = 0 // its one use
			return it.d
		}
	}
	return jr.data[o]
}

// settle counts the uses of data object it by the entries that had it
// in a row, and forgets the object when they were the last its n_entries
// counter announced.
func (jr *journalReader) settle(it journalItem) {
	d := it.d
	if d.left > it.uses {
		d.left -= it.uses
		return
	}
	if d.left > 0 {
		d.left = 0
		delete(jr.data, it.off)
		jr.keptSize -= len(d.name) + 1 + len(d.val)
	}
}

// appendHex is strconv.AppendUint(b, v, 16) (%llx), without its division
// loop: a cursor holds four such numbers per entry.
func appendHex(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	n := (max(bits.Len64(v), 1) + 3) / 4
	b = slices.Grow(b, n)
	out := b[len(b) : len(b)+n]
	for i := n - 1; i >= 0; i-- {
		out[i] = digits[v&0xf]
		v >>= 4
	}
	return b[:len(b)+n]
}

// synthField adds synthesized field i with value v to the record.
func (jr *journalReader) synthField(i int, v []byte) {
	jr.rec.add(synthesized[i], jr.synth[i].slot, jr.synth[i].kept, v)
}

// JournalFileHead reports whether the regular file at path is a binary
// journal file and, if so, the realtime of its first entry (µs since the epoch,
// header field head_entry_realtime; 0 for a file without entries). The
// files of one rotated journal are read in that order (a shell lists
// system.journal, the newest, before system@….journal).
func JournalFileHead(path string) (realtime uint64, ok bool) {
	// Only a regular file: reading the head of a pipe (a shell's
	// <(journalctl -o json)) would take those bytes from its reader.
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return 0, false
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	h := make([]byte, journalHeaderMin)
	if _, err := io.ReadFull(f, h); err != nil || !bytes.HasPrefix(h, journalMagic) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(h[184:]), true
}
