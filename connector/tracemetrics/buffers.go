package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

// The interval (delta) buffers: what the aggregator accumulates during one flush interval,
// and what the flusher turns into data points once the interval is over.

// deltaBuffer is the unit of double buffering: the aggregator fills one while the flusher
// turns the other into pmetric.Metrics. They trade places with a pointer swap at each flush.
type deltaBuffer struct {
	ts           int64 // flush time
	fams         []deltaFamily
	newResources []newResource
	resAttrs     []byte
	expiredRes   []uint32
}

func newDeltaBuffer(families int) *deltaBuffer {
	return &deltaBuffer{fams: make([]deltaFamily, families)}
}

// newResource announces a resource to the flusher with its output attributes.
type newResource struct {
	id    uint32
	attrs ref // in deltaBuffer.resAttrs
}

// deltaFamily is one family's part of a deltaBuffer.
type deltaFamily struct {
	slot []int32 // by series id: row+1, 0 when untouched this interval
	rows chunked[deltaRow]
	expo chunked[expoState] // exponential: by row
	slab slab               // exponential sketches of the rows
	// Explicit bucket counts, nb per row, 16 bits each: most series put far fewer spans in a
	// bucket in one interval, and the counts are the largest per-row part of a buffer. The
	// wraps of a busier bucket are carried in spill (row*nb+bucket → bucketWrap each), one map
	// update per bucketWrap spans, so no count is ever lost.
	buckets   chunked[uint16]
	spill     map[int]uint64
	exemplars []exemplar
	newSeries []newSeries
	keys      [][]byte  // the aggregator's key chunks at the swap (read only)
	moved     []keyMove // set when the aggregator compacted its keys at this swap
	expired   []uint32  // ids expired at this swap; reusable once the flusher hands the buffer back
}

// deltaRow is what one series accumulated during the current interval (40 bytes). The batch
// time of its last span is stamped on the series' record instead (seriesMeta.lastSeen).
type deltaRow struct {
	id    uint32
	exOff int32 // first exemplar slot in deltaFamily.exemplars, -1 when none
	exN   int32
	first int64 // batch time of the first span this interval
	count uint64
	sum   float64
}

// newSeries announces a series created by the aggregator to the flusher.
type newSeries struct {
	id      uint32
	res     uint32
	keyLen  uint32
	created int64
	keyRef  uint64 // in the aggregator's key arena
}

// keyMove gives the flusher the new key reference of a live series after a compaction.
type keyMove struct {
	id     uint32
	keyRef uint64
}

// newRow adds the row of series id, which has none in this interval, with its buckets.
func (d *deltaFamily) newRow(id uint32, ts int64, nb int, expo bool) int32 {
	if int(id) >= len(d.slot) {
		d.slot = grow(d.slot, int(id)+1)
	}
	r := int32(d.rows.n)
	d.slot[id] = r + 1
	d.rows.add(1)[0] = deltaRow{id: id, exOff: -1, first: ts}
	if nb > 0 {
		clear(d.buckets.add(nb))
	}
	if expo {
		d.expo.add(1)[0] = newExpoState()
	}
	return r
}

// observe counts one duration in explicit bucket i of row.
func (d *deltaFamily) observe(row, nb, i int) {
	b := &d.buckets.row(row, nb)[i]
	if *b++; *b == 0 {
		if d.spill == nil {
			d.spill = map[int]uint64{}
		}
		d.spill[row*nb+i] += bucketWrap
	}
}

// observeN counts k durations in explicit bucket i of row.
func (d *deltaFamily) observeN(row, nb, i int, k uint64) {
	b := &d.buckets.row(row, nb)[i]
	sum := uint64(*b) + k
	*b = uint16(sum)
	if wraps := sum / bucketWrap; wraps > 0 {
		if d.spill == nil {
			d.spill = map[int]uint64{}
		}
		d.spill[row*nb+i] += wraps * bucketWrap
	}
}

// bucketWrap is what a wrapped 16-bit bucket counter carries into spill.
const bucketWrap = 1 << 16

// bucketCounts writes the interval's bucket counts of row into dst.
func (d *deltaFamily) bucketCounts(row, nb int, dst []uint64) []uint64 {
	dst = dst[:0]
	for i, c := range d.buckets.row(row, nb) {
		v := uint64(c)
		if d.spill != nil {
			v += d.spill[row*nb+i]
		}
		dst = append(dst, v)
	}
	return dst
}

// touched reports whether id has a row this interval.
func (d *deltaFamily) touched(id uint32) bool {
	return int(id) < len(d.slot) && d.slot[id] != 0
}

// intervalRow returns the row series id filled in the interval and its index, or nil and -1
// when the series had no span in it.
func (d *deltaFamily) intervalRow(id uint32) (*deltaRow, int) {
	if !d.touched(id) {
		return nil, -1
	}
	i := int(d.slot[id] - 1)
	return d.rows.at(i), i
}

func (b *deltaBuffer) reset() {
	for i := range b.fams {
		b.fams[i].reset()
	}
	b.newResources = shrink(b.newResources)
	b.resAttrs = shrink(b.resAttrs)
}

// reset empties the family for the next interval; expired stays for the aggregator.
func (d *deltaFamily) reset() {
	for i := range d.rows.n {
		d.slot[d.rows.at(i).id] = 0
	}
	d.rows.reset()
	d.expo.reset()
	d.buckets.reset()
	clear(d.spill) // kept: an interval with a busy bucket is usually followed by another
	d.slab.reset()
	d.exemplars = shrink(d.exemplars)
	d.newSeries = release(d.newSeries)
	d.keys = nil
	d.moved = shrink(d.moved)
}

// shrinkMin is the capacity below which a buffer's slices are always kept.
const shrinkMin = 4096

// shrink empties s for reuse, or drops it when the interval used less than a quarter of its
// capacity: a cardinality burst (or the first interval, when every series is new) would
// otherwise keep both buffers at their largest size for the life of the process. An interval
// that needs the room again regrows it, at most once per shrink.
func shrink[T any](s []T) []T {
	if cap(s) > shrinkMin && len(s) < cap(s)/4 {
		return nil
	}
	return s[:0]
}

// release empties s for reuse unless it outgrew shrinkMin. For announcements of new series:
// a steady interval has few, and the room of a burst (or of the first interval, when every
// series is new) would otherwise stay with the buffer until the interval after next.
func release[T any](s []T) []T {
	if cap(s) > shrinkMin {
		return nil
	}
	return s[:0]
}

// rowsPerChunk is how many rows one chunk of a chunked holds.
const rowsPerChunk = 1 << 12

// chunked holds an interval's per-row values (the rows themselves, their bucket counts, their
// exponential state) in fixed-size chunks of rowsPerChunk rows of width values each, allocated
// as rows arrive. With a million series these are the largest part of a delta buffer, so a
// buffer gives them back once its interval is flushed: the spare buffer, which waits a whole
// interval for the next swap, holds none, and growing never copies values or has an old and a
// new array alive at once, as one slice grown by append does. Allocation is per chunk, never
// per span.
type chunked[T any] struct {
	chunks [][]T
	n      int // rows added
}

// add appends a row of width values and returns it. Its values are left as an earlier
// interval wrote them in a reused chunk: the caller sets them.
func (c *chunked[T]) add(width int) []T {
	row := c.n
	c.n++
	if row/rowsPerChunk == len(c.chunks) {
		c.chunks = append(c.chunks, make([]T, rowsPerChunk*width))
	}
	return c.row(row, width)
}

// row returns the width values of row.
func (c *chunked[T]) row(row, width int) []T {
	off := row % rowsPerChunk * width
	return c.chunks[row/rowsPerChunk][off : off+width : off+width]
}

// at returns row of a chunked of width 1.
func (c *chunked[T]) at(row int) *T {
	return &c.chunks[row/rowsPerChunk][row%rowsPerChunk]
}

// reset releases every chunk but the first, which a small steady state reuses without
// allocating.
func (c *chunked[T]) reset() {
	if len(c.chunks) > 1 {
		clear(c.chunks[1:])
		c.chunks = c.chunks[:1]
	}
	c.n = 0
}
