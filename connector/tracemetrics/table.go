package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/hash"

// seriesTable holds the identity of every series of one family: the hash index, and per id
// the canonical key bytes, the resource, the last time a span was seen and the series' row in
// the active delta buffer. The per-id fields sit in one 32-byte record, so resolving a span
// touches the index slot, this record, the key bytes and the row: no pointer, few cache lines.
type seriesTable struct {
	fam   *family
	index hash.Index
	meta  []seriesMeta
	free  []uint32
	n     int // live series, overflow series excluded
	total int // ids in use, overflow series included
	keys  keyArena
}

type seriesMeta struct {
	keyRef   uint64
	keyLen   uint32 // 0: id free
	res      uint32
	row      int32  // row in the active delta buffer, valid when epoch is current
	epoch    uint32 // aggregator epoch (flush count) of row
	lastSeen int64  // refreshed from the delta rows at each swap
}

func (t *seriesTable) key(id uint32) []byte {
	m := &t.meta[id]
	return t.keys.get(m.keyRef, m.keyLen)
}

func (t *seriesTable) alloc() uint32 {
	if n := len(t.free); n > 0 {
		id := t.free[n-1]
		t.free = t.free[:n-1]
		return id
	}
	id := uint32(len(t.meta))
	t.meta = append(t.meta, seriesMeta{})
	return id
}

// compactKeys copies the live keys into fresh chunks and lists the moves for the flusher.
func (t *seriesTable) compactKeys(moved []keyMove) []keyMove {
	var fresh keyArena
	for id := range t.meta {
		if m := &t.meta[id]; m.keyLen > 0 {
			m.keyRef = fresh.add(t.keys.get(m.keyRef, m.keyLen))
			moved = append(moved, keyMove{id: uint32(id), keyRef: m.keyRef})
		}
	}
	t.keys = fresh
	return moved
}
