package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

// The interval (delta) buffers: what the aggregator accumulates during one flush interval,
// and what the flusher turns into data points once the interval is over.

// DeltaBuffer is the unit of double buffering: the aggregator fills one while the flusher
// turns the other into pmetric.Metrics. They trade places with a pointer swap at each flush.
type DeltaBuffer struct {
	TS           int64 // flush time
	Fams         []DeltaFamily
	NewResources []AnnouncedResource
	ResAttrs     []byte
	ExpiredRes   []uint32
}

// NewDeltaBuffer returns an empty buffer for families families.
func NewDeltaBuffer(families int) *DeltaBuffer {
	return &DeltaBuffer{Fams: make([]DeltaFamily, families)}
}

// AnnouncedResource announces a resource to the flusher with its output attributes.
type AnnouncedResource struct {
	ID    uint32
	Attrs Ref // in deltaBuffer.resAttrs
}

// DeltaFamily is one family's part of a deltaBuffer.
type DeltaFamily struct {
	slot []int32 // by series id: row+1, 0 when untouched this interval
	Rows Chunked[DeltaRow]
	Expo Chunked[ExpoState] // exponential: by row
	Slab Slab               // exponential sketches of the rows
	// Explicit bucket counts, nb per row, 16 bits each: most series put far fewer spans in a
	// bucket in one interval, and the counts are the largest per-row part of a buffer. The
	// wraps of a busier bucket are carried in spill (row*nb+bucket → bucketWrap each), one map
	// update per bucketWrap spans, so no count is ever lost.
	Buckets   Chunked[uint16]
	spill     map[int]uint64
	Exemplars []Exemplar
	NewSeries []AnnouncedSeries
	Keys      [][]byte  // the aggregator's key chunks at the swap (read only)
	Moved     []KeyMove // set when the aggregator compacted its keys at this swap
	Expired   []uint32  // ids expired at this swap; reusable once the flusher hands the buffer back
}

// DeltaRow is what one series accumulated during the current interval (40 bytes). The batch
// time of its last span is stamped on the series' record instead (seriesMeta.lastSeen).
type DeltaRow struct {
	ID    uint32
	ExOff int32 // first exemplar slot in deltaFamily.exemplars, -1 when none
	ExN   int32
	First int64 // batch time of the first span this interval
	Count uint64
	Sum   float64
}

// AnnouncedSeries announces a series created by the aggregator to the flusher.
type AnnouncedSeries struct {
	ID      uint32
	Res     uint32
	KeyLen  uint32
	Created int64
	KeyRef  uint64 // in the aggregator's key arena
}

// KeyMove gives the flusher the new key reference of a live series after a compaction.
type KeyMove struct {
	ID     uint32
	KeyRef uint64
}

// NewRow adds the row of series id, which has none in this interval, with its buckets.
func (d *DeltaFamily) NewRow(id uint32, ts int64, nb int, expo bool) int32 {
	if int(id) >= len(d.slot) {
		d.slot = Grow(d.slot, int(id)+1)
	}
	r := int32(d.Rows.n)
	d.slot[id] = r + 1
	d.Rows.Add(1)[0] = DeltaRow{ID: id, ExOff: -1, First: ts}
	if nb > 0 {
		clear(d.Buckets.Add(nb))
	}
	if expo {
		d.Expo.Add(1)[0] = NewExpoState()
	}
	return r
}

// Observe counts one duration in explicit bucket i of row.
func (d *DeltaFamily) Observe(row, nb, i int) {
	b := &d.Buckets.Row(row, nb)[i]
	if *b++; *b == 0 {
		if d.spill == nil {
			d.spill = map[int]uint64{}
		}
		d.spill[row*nb+i] += bucketWrap
	}
}

// ObserveN counts k durations in explicit bucket i of row.
func (d *DeltaFamily) ObserveN(row, nb, i int, k uint64) {
	b := &d.Buckets.Row(row, nb)[i]
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

// AddBucketCounts adds the interval's bucket counts of row to dst (nb of them).
func (d *DeltaFamily) AddBucketCounts(row, nb int, dst []uint64) {
	for j, c := range d.Buckets.Row(row, nb) {
		dst[j] += uint64(c)
	}
	if d.spill != nil {
		for j := range dst {
			dst[j] += d.spill[row*nb+j]
		}
	}
}

// BucketCounts writes the interval's bucket counts of row into dst.
func (d *DeltaFamily) BucketCounts(row, nb int, dst []uint64) []uint64 {
	dst = dst[:0]
	for i, c := range d.Buckets.Row(row, nb) {
		v := uint64(c)
		if d.spill != nil {
			v += d.spill[row*nb+i]
		}
		dst = append(dst, v)
	}
	return dst
}

// Touched reports whether id has a row this interval.
func (d *DeltaFamily) Touched(id uint32) bool {
	return int(id) < len(d.slot) && d.slot[id] != 0
}

// IntervalRow returns the row series id filled in the interval and its index, or nil and -1
// when the series had no span in it.
func (d *DeltaFamily) IntervalRow(id uint32) (*DeltaRow, int) {
	if !d.Touched(id) {
		return nil, -1
	}
	i := int(d.slot[id] - 1)
	return d.Rows.At(i), i
}

// Reset empties the buffer for its next interval.
func (b *DeltaBuffer) Reset() {
	for i := range b.Fams {
		b.Fams[i].Reset()
	}
	b.NewResources = shrink(b.NewResources)
	b.ResAttrs = shrink(b.ResAttrs)
}

// Reset empties the family for the next interval; expired stays for the aggregator.
func (d *DeltaFamily) Reset() {
	for i := range d.Rows.n {
		d.slot[d.Rows.At(i).ID] = 0
	}
	d.Rows.Reset()
	d.Expo.Reset()
	d.Buckets.Reset()
	clear(d.spill) // kept: an interval with a busy bucket is usually followed by another
	d.Slab.Reset()
	d.Exemplars = shrink(d.Exemplars)
	d.NewSeries = release(d.NewSeries)
	d.Keys = nil
	d.Moved = shrink(d.Moved)
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

// Chunked holds an interval's per-row values (the rows themselves, their bucket counts, their
// exponential state) in fixed-size chunks of rowsPerChunk rows of width values each, allocated
// as rows arrive. With a million series these are the largest part of a delta buffer, so a
// buffer gives them back once its interval is flushed: the spare buffer, which waits a whole
// interval for the next swap, holds none, and growing never copies values or has an old and a
// new array alive at once, as one slice grown by append does. Allocation is per chunk, never
// per span.
type Chunked[T any] struct {
	chunks [][]T
	n      int // rows added
}

// Add appends a row of width values and returns it. Its values are left as an earlier
// interval wrote them in a reused chunk: the caller sets them.
func (c *Chunked[T]) Add(width int) []T {
	row := c.n
	c.n++
	if row/rowsPerChunk == len(c.chunks) {
		c.chunks = append(c.chunks, make([]T, rowsPerChunk*width))
	}
	return c.Row(row, width)
}

// Row returns the width values of Row.
func (c *Chunked[T]) Row(row, width int) []T {
	off := row % rowsPerChunk * width
	return c.chunks[row/rowsPerChunk][off : off+width : off+width]
}

// Len is the number of rows added.
func (c *Chunked[T]) Len() int { return c.n }

// At returns row of a chunked of width 1.
func (c *Chunked[T]) At(row int) *T {
	return &c.chunks[row/rowsPerChunk][row%rowsPerChunk]
}

// Reset releases every chunk but the first, which a small steady state reuses without
// allocating.
func (c *Chunked[T]) Reset() {
	if len(c.chunks) > 1 {
		clear(c.chunks[1:])
		c.chunks = c.chunks[:1]
	}
	c.n = 0
}

// KeyAt returns the n bytes at r in chunks.
func KeyAt(chunks [][]byte, r uint64, n uint32) []byte {
	c := chunks[r>>32]
	off := uint32(r)
	return c[off : off+n : off+n]
}
