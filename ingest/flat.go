package ingest

// Slots number the fields the Assembler and normalize look up, so a lookup
// is an array index instead of a map access per field per record. The first
// ones (up to slotIdentifier) become Entry members, not Fields.
const (
	slotNone int8 = iota
	slotMessage
	slotCursor
	slotRealtime
	slotHostname
	slotUnit
	slotInvocation
	slotPID
	slotIdentifier // last of the mapped slots
	slotSourceRealtime
	slotPartialID
	slotPartialOrdinal
	slotPartialLast
	slotPartialMessage
	slotLineBreak
	slotContainerIDFull
	slotContainerID
	slotPriority
	slotStreamID
	numSlots
)

// slotDropped marks a field the reader was told not to keep (see
// Options.Fields): parsed past, never copied into Entry.Fields.
const slotDropped int8 = -1

// slotOf returns the slot of field name k (slotNone for other fields).
func slotOf(k string) int8 {
	switch k {
	case "MESSAGE":
		return slotMessage
	case "__CURSOR":
		return slotCursor
	case "__REALTIME_TIMESTAMP":
		return slotRealtime
	case "_HOSTNAME":
		return slotHostname
	case "_SYSTEMD_UNIT":
		return slotUnit
	case "_SYSTEMD_INVOCATION_ID":
		return slotInvocation
	case "_PID":
		return slotPID
	case "SYSLOG_IDENTIFIER":
		return slotIdentifier
	case "_SOURCE_REALTIME_TIMESTAMP":
		return slotSourceRealtime
	case "CONTAINER_PARTIAL_ID":
		return slotPartialID
	case "CONTAINER_PARTIAL_ORDINAL":
		return slotPartialOrdinal
	case "CONTAINER_PARTIAL_LAST":
		return slotPartialLast
	case "CONTAINER_PARTIAL_MESSAGE":
		return slotPartialMessage
	case "_LINE_BREAK":
		return slotLineBreak
	case "CONTAINER_ID_FULL":
		return slotContainerIDFull
	case "CONTAINER_ID":
		return slotContainerID
	case "PRIORITY":
		return slotPriority
	case "_STREAM_ID":
		return slotStreamID
	}
	return slotNone
}

// isMappedSlot reports whether fields of slot s become Entry members.
func isMappedSlot(s int8) bool { return s >= slotMessage && s <= slotIdentifier }

// flatRecord is a Record as parallel slices in input order, with the slotted
// fields indexed: the JSON reader fills one per line without building a map.
// A repeated name keeps every occurrence; the last one wins, as in a Record.
// A nil value means JSON null (see Record).
type flatRecord struct {
	names []string
	slots []int8
	kept  []bool // fieldSet.inFields of each field, decided once per key
	vals  [][]byte
	at    [numSlots]int32 // 1 + index of the slot's last occurrence; 0 = absent
	arena []byte          // decoded values of the last parse
	over  bool            // the last parse stopped at maxRecordFields
	gen   uint64          // parses since r was made (reset counts them)
	// realtime is __REALTIME_TIMESTAMP in µs when realtimeOK: set by a
	// reader that has it as a number (a journal file's entry), so that
	// recordTime need not read its digits back.
	realtime   int64
	realtimeOK bool
	// keptFrom, when not 0, is the gen of an earlier parse into r whose
	// fields for Entry.Fields (fieldSet.inFields) were these, in this
	// order with these values: a reader that knows it (a journal file's
	// entry sharing its DATA objects with the last one) spares the
	// byte comparison of fieldsMemo.same.
	keptFrom uint64
}

func (r *flatRecord) reset() {
	r.names, r.slots, r.kept, r.vals = r.names[:0], r.slots[:0], r.kept[:0], r.vals[:0]
	r.at = [numSlots]int32{}
	r.over, r.realtimeOK, r.keptFrom = false, false, 0
	r.gen++
}

func (r *flatRecord) add(name string, slot int8, kept bool, v []byte) {
	r.names = append(r.names, name)
	r.slots = append(r.slots, slot)
	r.kept = append(r.kept, kept)
	r.vals = append(r.vals, v)
	if slot > slotNone {
		r.at[slot] = int32(len(r.vals))
	}
}

// get returns the value of slot s (nil when absent or null).
func (r *flatRecord) get(s int8) []byte {
	if i := r.at[s]; i > 0 {
		return r.vals[i-1]
	}
	return nil
}

// lookup is get that also reports presence.
func (r *flatRecord) lookup(s int8) ([]byte, bool) {
	if i := r.at[s]; i > 0 {
		return r.vals[i-1], true
	}
	return nil, false
}

// fromMap fills r with the fields of rec (values shared, not copied); a
// field keep does not list is marked dropped (keep nil: none is).
func (r *flatRecord) fromMap(rec Record, keep fieldSet) {
	r.reset()
	for k, v := range rec {
		slot := keep.slot(k)
		r.add(k, slot, keep.inFields(k, slot), v)
	}
}

// fieldSet is Options.Fields as a set; nil keeps every field.
type fieldSet map[string]bool

func newFieldSet(names []string) fieldSet {
	if names == nil {
		return nil
	}
	s := fieldSet{}
	for _, n := range names {
		s[n] = true
	}
	return s
}

// slot is slotOf(name), or slotDropped for an unslotted field s lacks.
// Slotted fields stay in the record: reassembly and Entry members read them
// (fieldSet.inFields decides whether they reach Entry.Fields).
func (s fieldSet) slot(name string) int8 {
	slot := slotOf(name)
	if slot == slotNone && s != nil && !s[name] {
		return slotDropped
	}
	return slot
}

// toMap returns r as a Record (values shared, not copied).
func (r *flatRecord) toMap() Record {
	m := make(Record, len(r.names))
	for i, k := range r.names {
		m[k] = r.vals[i]
	}
	return m
}

// clone returns a copy of r that owns its values (one buffer for all), for
// a record that must outlive the next parse (the first piece of a line).
func (r *flatRecord) clone() *flatRecord {
	size := 0
	for _, v := range r.vals {
		size += len(v)
	}
	buf := make([]byte, 0, size)
	c := &flatRecord{names: append([]string(nil), r.names...), slots: append([]int8(nil), r.slots...), kept: append([]bool(nil), r.kept...),
		vals: make([][]byte, len(r.vals)), at: r.at, realtime: r.realtime, realtimeOK: r.realtimeOK}
	for i, v := range r.vals {
		if v == nil {
			continue
		}
		start := len(buf)
		buf = append(buf, v...)
		c.vals[i] = buf[start:len(buf):len(buf)]
	}
	return c
}

// keyCache remembers the field names of the previous record by position:
// journal records of one kind list the same fields in the same order, so a
// name is found by one comparison instead of a map lookup or an allocation.
type keyCache struct {
	names []string
	slots []int8
	kept  []bool
	plain []bool // the name is printable ASCII without '"' or '\\': its JSON is itself
	keep  fieldSet
	// members are the previous records' members by position, as written:
	// most fields of a stream (_HOSTNAME, _SYSTEMD_UNIT, _UID, _BOOT_ID,
	// CONTAINER_NAME, ...) repeat byte for byte from record to record, and
	// one comparison with the bytes last seen replaces parsing them.
	members []memberMemo
	// runs[i], when its n > 0, are members i to i+n-1 that all came from
	// the memo in one record, compared and added at once the next time.
	runs []memberRun
	hits []memberHit // the members of the record being parsed taken from the memo one by one
}

// memberHit is a member of the record being parsed that came from the memo
// one by one (memberMemo): its index and where it lies in the line.
type memberHit struct {
	i, start, end int
}

// memberRun is a run of members as written, the separators between them
// included, and what they parsed to (values owned).
type memberRun struct {
	raw     []byte
	n       int
	names   []string
	slots   []int8
	kept    []bool
	vals    [][]byte
	vbuf    []byte
	slotted []int32 // indexes of the members with a slot
	// in and gen: the record the run was last added to, and that parse's
	// flatRecord.gen. The run then still lies in in's arrays where it
	// was added (a parse only appends), for the next parse to take in place.
	in  *flatRecord
	gen uint64
}

// maxRunBytes caps a run's bytes.
const maxRunBytes = 4096

// sameRun is same for the run of members starting at the i-th: it returns
// how many members it added to r (0: no run, or not the same bytes; the
// run is then dropped).
func (c *keyCache) sameRun(p *jscan, r *flatRecord, i int) int {
	if i >= len(c.runs) || c.runs[i].n == 0 {
		return 0
	}
	u := &c.runs[i]
	n := len(u.raw)
	if len(p.s)-p.i <= n || string(p.s[p.i:p.i+n]) != string(u.raw) {
		u.n = 0
		return 0
	}
	if e := p.s[p.i+n]; e != ',' && e != '}' && !isJSONSpace(e) {
		u.n = 0
		return 0
	}
	p.i += n
	base := int32(len(r.vals))
	if end := i + u.n; u.in == r && u.gen+1 == r.gen && len(r.vals) == i && cap(r.names) >= end &&
		cap(r.slots) >= end && cap(r.kept) >= end && cap(r.vals) >= end {
		// The previous record added this run at the same place: its
		// members are still there, and copying them again (pointers, so
		// with write barriers) cost ~5 % of reading a serving journal.
		r.names, r.slots, r.kept, r.vals = r.names[:end], r.slots[:end], r.kept[:end], r.vals[:end]
	} else {
		r.names = append(r.names, u.names...)
		r.slots = append(r.slots, u.slots...)
		r.kept = append(r.kept, u.kept...)
		r.vals = append(r.vals, u.vals...)
	}
	u.in, u.gen = r, r.gen
	for _, k := range u.slotted {
		r.at[u.slots[k]] = base + k + 1
	}
	return u.n
}

// newRuns makes a run of every two or more members in a row of the record
// just parsed (s) that came from the memo one by one.
func (c *keyCache) newRuns(s []byte) {
	h := c.hits
	for k := 0; k < len(h); {
		l := k + 1
		for l < len(h) && h[l].i == h[l-1].i+1 {
			l++
		}
		if l-k >= 2 && h[l-1].end-h[k].start <= maxRunBytes {
			c.setRun(h[k].i, h[l-1].i+1, s[h[k].start:h[l-1].end])
		}
		k = l
	}
}

// setRun makes members i to j-1, written as raw, a run.
func (c *keyCache) setRun(i, j int, raw []byte) {
	for len(c.runs) < j {
		c.runs = append(c.runs, memberRun{})
	}
	u := &c.runs[i]
	u.raw = append(u.raw[:0], raw...)
	u.n = j - i
	u.in = nil
	u.names, u.slots, u.kept, u.vals, u.slotted = u.names[:0], u.slots[:0], u.kept[:0], u.vals[:0], u.slotted[:0]
	size := 0
	for _, m := range c.members[i:j] {
		size += len(m.val)
	}
	if cap(u.vbuf) < size {
		u.vbuf = make([]byte, 0, size)
	}
	u.vbuf = u.vbuf[:0]
	for k, m := range c.members[i:j] {
		u.names = append(u.names, m.name)
		u.slots = append(u.slots, m.slot)
		u.kept = append(u.kept, m.kept)
		if m.slot > slotNone {
			u.slotted = append(u.slotted, int32(k))
		}
		var v []byte
		u.vbuf, v = ownValue(u.vbuf, m.val) // within capacity: earlier values stay put
		u.vals = append(u.vals, v)
	}
}

// ownValue appends a parsed value to buf and returns buf and the copy,
// capped: nil stays nil (JSON null) and an empty value stays non-nil (an
// empty string), as the parser gives them.
func ownValue(buf, val []byte) ([]byte, []byte) {
	switch {
	case val == nil:
		return buf, nil
	case len(val) == 0:
		return buf, empty
	}
	start := len(buf)
	buf = append(buf, val...)
	return buf, buf[start:len(buf):len(buf)]
}

// memberMemo is one member of a record as written ("name":value, from the
// key's opening quote to the value's last byte) and what it parsed to. A
// member that changed twice in a row (MESSAGE, __CURSOR, timestamps) is
// not copied again but every memoRetry records, so the memo costs nothing
// on fields that always change.
type memberMemo struct {
	raw    []byte // empty: nothing to compare with
	val    []byte // the parsed value, owned; nil for JSON null
	vbuf   []byte
	name   string
	slot   int8
	kept   bool
	misses uint32 // records in a row this member was parsed
}

const (
	memoRetry      = 64
	maxMemoSpan    = 512 // bytes; longer members are parsed every time
	maxMemoMembers = 128 // the first members of a record are remembered (journald's trusted fields are ~30)
)

// same reports whether the record's i-th member, at p.i, is byte for byte
// the one remembered; then it is added to r and p moves past it. The
// member must be followed by a byte that ends a value (white space, ','
// or '}'), or a longer number would pass for the one remembered.
func (c *keyCache) same(p *jscan, r *flatRecord, i int) bool {
	if i >= len(c.members) {
		return false
	}
	m := &c.members[i]
	n := len(m.raw)
	if n == 0 || len(p.s)-p.i <= n || string(p.s[p.i:p.i+n]) != string(m.raw) {
		return false
	}
	if e := p.s[p.i+n]; e != ',' && e != '}' && !isJSONSpace(e) {
		return false
	}
	p.i += n
	r.add(m.name, m.slot, m.kept, m.val)
	m.misses = 0
	return true
}

// remember records the i-th member just parsed from raw (see memberMemo).
func (c *keyCache) remember(i int, raw []byte, name string, slot int8, kept bool, val []byte) {
	if i > len(c.members) || i >= maxMemoMembers {
		return
	}
	if i == len(c.members) {
		c.members = append(c.members, memberMemo{})
	}
	m := &c.members[i]
	m.misses++
	if (m.misses > 2 && m.misses%memoRetry != 0) || len(raw) > maxMemoSpan {
		m.raw = m.raw[:0]
		return
	}
	m.raw = append(m.raw[:0], raw...)
	m.name, m.slot, m.kept = name, slot, kept
	m.vbuf, m.val = ownValue(m.vbuf[:0], val)
}

// name returns the i-th key's name, its slot and whether it goes to
// Entry.Fields (fieldSet.inFields).
func (c *keyCache) name(i int, key []byte) (string, int8, bool) {
	if i < len(c.names) && c.names[i] == string(key) {
		return c.names[i], c.slots[i], c.kept[i]
	}
	name := fieldName(key)
	slot := c.keep.slot(name)
	kept := c.keep.inFields(name, slot)
	if i < len(c.names) {
		c.names[i], c.slots[i], c.kept[i], c.plain[i] = name, slot, kept, plainKey(name)
	} else if i == len(c.names) {
		c.names = append(c.names, name)
		c.slots = append(c.slots, slot)
		c.kept = append(c.kept, kept)
		c.plain = append(c.plain, plainKey(name))
	}
	return name, slot, kept
}

// plainKey reports whether a JSON string of k holds k's bytes unescaped.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
