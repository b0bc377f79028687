package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import "math/bits"

// idTable finds ids (label sets, rows) by a 64-bit hash of their key. It is
// open addressing with linear probing over one flat slice of 8-byte slots,
// the hash's top 32 bits and the id, at most 3/4 full and never under 1/8
// after a compact: 11 to 21 bytes per id, where the Go maps it replaced took
// 40 to 64 bytes per entry and never shrank. A million RED series hold three
// million such entries (label sets by bytes, label sets by OTLP identity,
// rows by family and label set), so this was a third of the store's Go heap.
//
// The table holds no keys: the caller confirms a candidate against its own
// copy of the key (eq), so distinct keys with equal hashes live side by
// side, and a hash collision costs a comparison, never a wrong answer.
type idTable struct {
	slots []idSlot // a power of two long, or nil
	n     int
}

type idSlot struct {
	tag uint32 // the top 32 bits of the key's hash; its low bits are the home slot
	id  uint32 // id + 1; 0 marks an empty slot
}

// idTableMin is the smallest table: below it, shrinking saves nothing.
const idTableMin = 64

// find returns the id whose key hashes to h and satisfies eq.
func (t *idTable) find(h uint64, eq func(id uint32) bool) (uint32, bool) {
	if t.n == 0 {
		return 0, false
	}
	tag, mask := uint32(h>>32), len(t.slots)-1
	for i := int(tag) & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.tag == tag && eq(s.id-1) {
			return s.id - 1, true
		}
	}
}

// insert adds id under h; the caller knows it is not there yet.
func (t *idTable) insert(h uint64, id uint32) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.resize(max(idTableMin, 2*len(t.slots)))
	}
	t.place(idSlot{tag: uint32(h >> 32), id: id + 1})
	t.n++
}

func (t *idTable) place(s idSlot) {
	mask := len(t.slots) - 1
	i := int(s.tag) & mask
	for t.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

// remove deletes id, held under h. The slots after it that probed past it
// move back (backward-shift deletion), so no tombstone lengthens later probes.
func (t *idTable) remove(h uint64, id uint32) {
	if t.n == 0 {
		return
	}
	want := idSlot{tag: uint32(h >> 32), id: id + 1}
	mask := len(t.slots) - 1
	i := int(want.tag) & mask
	for t.slots[i] != want {
		if t.slots[i].id == 0 {
			return // not held
		}
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j].id != 0; j = (j + 1) & mask {
		// The slot at j stays unless its home is cyclically outside (i, j]:
		// then the hole at i is on its probe path, and it moves there.
		home := int(t.slots[j].tag) & mask
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = idSlot{}
	t.n--
}

// fit gives memory back after a burst: a table under 1/8 full is rebuilt at
// twice its entries. Linear in the table, and rare (store compactions).
func (t *idTable) fit() {
	if len(t.slots) > idTableMin && 8*t.n < len(t.slots) {
		t.resize(max(idTableMin, 1<<bits.Len(uint(2*t.n))))
	}
}

func (t *idTable) resize(size int) {
	old := t.slots
	t.slots = make([]idSlot, size)
	for _, s := range old {
		if s.id != 0 {
			t.place(s)
		}
	}
}

// reset empties the table and releases its slots.
func (t *idTable) reset() { t.slots, t.n = nil, 0 }
