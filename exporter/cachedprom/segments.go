package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// A large body is compressed on several cores, as pigz does: it is cut into
// segments of about segmentSize uncompressed bytes, each deflated on its own
// (an empty dictionary) by one of a few workers and ended with a sync flush
// (a byte-aligned, non-final empty stored block), so the segments' deflate
// output concatenated in order is one valid deflate stream. One gzip header
// before it, a final empty block and the trailer (the body's CRC-32, combined
// from the segments', and its length) after it make one gzip member: every
// gzip decoder reads it, also those that stop after a first member (curl
// decodes one member only and fails on a second, and deliberately so).
// Compressing is most of a single-core render and would otherwise run on
// the renderer's one core while the others idle.
//
// For the text formats the workers format too (renderFrames): the renderer
// copies the store's rows into a ring slot, frame by frame under the store
// lock as a single-core render does, and hands the slot over once they make
// about segmentSize of text; the worker formats them into its own buffer and
// compresses that. Formatting is a quarter to a third of a render's
// processor time (CPU profile of the binary at a million series;
// BenchmarkRenderSegments): on the renderer's goroutine it bounded a render
// at about three times its single-core speed however many cores it had.
// The protobuf body is formatted by the renderer into the slot's buffer, as
// before (its messages are built frame by frame in one encoder). A slot
// comes back to the renderer only once its segment's output was appended, so
// at most len(slots) segments (rows and output) and one text per worker are
// held at once, whatever the body's size.

// segmentSize is the uncompressed size of one segment. Each segment starts
// with an empty dictionary: on a spanmetrics-shaped body of 62 MB the gzip
// form was 0.95% larger than the single-core one with 1 MiB segments (then
// separate gzip members), 0.49% with 2 MiB and 0.17% with 4 MiB
// (segments_test.go bounds it at 1%). 2 MiB keeps the buffers held small
// and the hand-over rare.
const segmentSize = 2 << 20

// maxSegmentRows bounds the memory of the rows a segment holds for its
// worker (frame.size): counters' rows take more memory than their text, so
// their segments end on this before segmentSize of text.
const maxSegmentRows = segmentSize / 2

// parallelMinBody is the expected body length (snapshotRenderer.expectedLen)
// above which segments are used.
// Smaller bodies take milliseconds to compress on one core; starting workers
// would not pay. It is above maxKeptBody, so a body collected for identity
// clients (keepSink) is always compressed on the renderer's goroutine.
const parallelMinBody = 2 * maxKeptBody

// maxCompressWorkers bounds the workers: each holds a segment's text and up
// to two segments of rows and output, and a render uses at most half a core
// on average (the pacer) whatever its width.
const maxCompressWorkers = 8

// slotsPerWorker is how many segments each worker may have in flight: one
// being compressed and one queued, so a worker never waits for the
// renderer to fill the next segment.
const slotsPerWorker = 2

// compressWorkers is how many workers compress a body: GOMAXPROCS up to
// maxCompressWorkers, or want when set (tests). 1 means the body is
// compressed on the renderer's goroutine, as one deflate stream.
func compressWorkers(want int) int {
	if want > 0 {
		return want
	}
	return min(runtime.GOMAXPROCS(0), maxCompressWorkers)
}

// segmentSlot is one segment: what the renderer put in it (text, frames of
// rows), then its deflate output, the length and CRC-32 of its text.
type segmentSlot struct {
	// in is text the renderer formatted: the protobuf body, or the text
	// formats' lines before the families (target_info).
	in []byte
	// parts are the frames of rows the worker formats after in; their
	// buffers are kept across renders.
	parts  []framePart
	nParts int
	out    bytes.Buffer
	n      int // the segment's text length
	crc    uint32
	busy   bool          // handed to the workers, output not yet appended
	done   chan struct{} // capacity 1: a worker signals the segment compressed
	took   time.Duration // the worker's time on it
}

// framePart is a frame of rows of one family for a worker to format, with
// the family's header before its first valid row when header is set.
type framePart struct {
	f      frame
	fam    familyRef
	header bool
}

// segmentWorker is what one worker keeps between renders.
type segmentWorker struct {
	fw   *flate.Writer
	fr   renderer // its formatter: settings and scratch
	text []byte   // a segment's text, formatted from frames
}

// segmentCompressor compresses one body at a time in segments. Its buffers
// and deflate writers are kept between renders; its goroutines live for one
// body.
type segmentCompressor struct {
	slots   []*segmentSlot
	workers []*segmentWorker
	header  []byte // the gzip header, as the single-core gzip.Writer writes it
	om      bool   // the body is OpenMetrics, for the formatters
	est     int    // the filling slot's text, estimated (renderFrames)
	rows    int    // the filling slot's rows' memory (renderFrames)
	jobs    chan *segmentSlot
	wg      sync.WaitGroup
	dst     *offHeapBuffer
	seq     int           // segments handed over in this body
	crc     uint32        // CRC-32 of the segments appended so far
	size    uint32        // their length, modulo 2^32 as gzip records it
	total   int           // their length
	work    time.Duration // the workers' time on this body
	wait    time.Duration // the renderer's time waiting for segments
}

// start begins a body compressed into dst by workers goroutines, whose
// formatters take rd's settings, and returns the buffer to format the first
// segment into.
func (m *segmentCompressor) start(dst *offHeapBuffer, workers int, rd *renderer) []byte {
	if m.header == nil {
		// The header the single-core path writes (gzip.Writer writes it
		// on the first Write), so the two forms differ only in the
		// compressed data.
		var hdr bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&hdr, gzipLevel)
		_, _ = zw.Write(nil)
		m.header = hdr.Bytes()
	}
	dst.reset()
	_, _ = dst.Write(m.header)
	m.dst, m.seq, m.crc, m.size, m.total, m.work, m.wait, m.est, m.rows = dst, 0, 0, 0, 0, 0, 0, 0, 0
	for len(m.workers) < workers {
		fw, _ := flate.NewWriter(nil, gzipLevel)
		m.workers = append(m.workers, &segmentWorker{fw: fw})
	}
	m.workers = m.workers[:workers]
	n := workers * slotsPerWorker
	for len(m.slots) < n {
		// Buffers grow to what the renderer puts in them (a protobuf
		// segment, rows for a text one) and are kept for the next body.
		m.slots = append(m.slots, &segmentSlot{done: make(chan struct{}, 1)})
	}
	// Slots beyond this body's ring (the worker count went down) are let go.
	clear(m.slots[n:])
	m.slots = m.slots[:n]
	m.jobs = make(chan *segmentSlot, n)
	m.wg.Add(workers)
	for _, w := range m.workers {
		w.fr.withTimestamps, w.fr.classicFallback = rd.withTimestamps, rd.classicFallback
		go m.compress(w)
	}
	return m.slots[0].in[:0]
}

// compress is one worker: it formats and deflates segments until the body
// ends.
func (m *segmentCompressor) compress(w *segmentWorker) {
	defer m.wg.Done()
	for s := range m.jobs {
		began := time.Now()
		text := s.in
		if s.nParts > 0 {
			text = append(w.text[:0], s.in...)
			for i := range s.parts[:s.nParts] {
				p := &s.parts[i]
				text, _ = w.fr.appendRows(text, &p.f, &p.fam, p.header, m.om, false)
			}
			w.text = text
		}
		s.out.Reset()
		w.fw.Reset(&s.out)
		_, _ = w.fw.Write(text)
		// A sync flush, not Close: the block stays non-final and the
		// output ends on a byte boundary, so the next segment's blocks
		// follow it in one deflate stream.
		_ = w.fw.Flush()
		s.n, s.crc = len(text), crc32.ChecksumIEEE(text)
		s.took = time.Since(began)
		s.done <- struct{}{}
	}
}

// submit hands over a segment (dst, the buffer start or the last submit
// returned, with the frames part returned) and returns the buffer for the
// next one, once the slot it belongs to is free: its previous segment's
// output appended.
func (m *segmentCompressor) submit(dst []byte) []byte {
	s := m.slots[m.seq%len(m.slots)]
	s.in, s.busy = dst, true
	m.jobs <- s
	m.seq++
	m.est, m.rows = 0, 0
	next := m.slots[m.seq%len(m.slots)]
	m.collect(next)
	return next.in[:0]
}

// part returns a frame of the segment being filled, for the renderer to
// copy rows into.
func (m *segmentCompressor) part() *framePart {
	s := m.slots[m.seq%len(m.slots)]
	if s.nParts == len(s.parts) {
		s.parts = append(s.parts, framePart{})
	}
	s.nParts++
	return &s.parts[s.nParts-1]
}

// unpart takes back the frame part returned last: it had no row to format.
func (m *segmentCompressor) unpart() {
	m.slots[m.seq%len(m.slots)].nParts--
}

// collect waits for the segment in s, if any, and appends its output. Slots
// are collected in the order they were submitted, so segments are appended
// in the body's order.
func (m *segmentCompressor) collect(s *segmentSlot) {
	if !s.busy {
		return
	}
	began := time.Now()
	<-s.done
	m.wait += time.Since(began)
	_, _ = m.dst.Write(s.out.Bytes())
	m.crc = crc32Combine(m.crc, s.crc, int64(s.n))
	m.size += uint32(s.n) //nolint:gosec // gzip records the length modulo 2^32
	m.total += s.n
	m.work += s.took
	s.busy, s.nParts = false, 0
}

// finalBlock is an empty final deflate block (fixed Huffman codes, only
// the end-of-block symbol): it ends the stream the segments make.
var finalBlock = []byte{0x03, 0x00}

// finish submits the last segment (dst and the frames part returned),
// appends what is in flight in order, ends the deflate stream and writes the
// gzip trailer, and stops the workers. It returns the body's length, the
// workers' time on it and the time the renderer waited for them.
func (m *segmentCompressor) finish(dst []byte) (bodyLen int, work, waited time.Duration) {
	if len(dst) > 0 || m.slots[m.seq%len(m.slots)].nParts > 0 {
		s := m.slots[m.seq%len(m.slots)]
		s.in, s.busy = dst, true
		m.jobs <- s
		m.seq++
	}
	for i := range len(m.slots) {
		m.collect(m.slots[(m.seq+i)%len(m.slots)])
	}
	close(m.jobs)
	m.wg.Wait()
	_, _ = m.dst.Write(finalBlock)
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], m.crc)
	binary.LittleEndian.PutUint32(trailer[4:], m.size)
	_, _ = m.dst.Write(trailer[:])
	m.jobs, m.dst = nil, nil
	return m.total, m.work, m.wait
}

// release lets the buffers and writers go: the body went back under
// parallelMinBody, and holding them for a size the store may never reach
// again would be memory for nothing.
func (m *segmentCompressor) release() {
	m.slots, m.workers = nil, nil
}

// crc32Combine returns the CRC-32 (IEEE) of a sequence whose first part has
// crc1 and whose second part, len2 bytes long, has crc2: zlib's
// crc32_combine (1.2.12 on), which hash/crc32 does not offer. crc1 is
// multiplied by x^(8·len2) modulo the polynomial, a microsecond once per
// segment.
func crc32Combine(crc1, crc2 uint32, len2 int64) uint32 {
	return multModP(x2nModP(uint64(len2), 3), crc1) ^ crc2 //nolint:gosec // len2 is a length
}

// crcPoly is the CRC-32 polynomial, bits reflected: in this representation
// the polynomial 1 (x^0) is 1<<31.
const crcPoly = 0xedb88320

// multModP returns a(x)·b(x) modulo the polynomial.
func multModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2nTable[k] is x^(2^k) modulo the polynomial.
var x2nTable = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < len(t); k++ {
		p = multModP(p, p)
		t[k] = p
	}
	return t
}()

// x2nModP returns x^(n·2^k) modulo the polynomial.
func x2nModP(n uint64, k uint) uint32 {
	p := uint32(1) << 31 // x^0
	for ; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2nTable[k&31], p)
		}
	}
	return p
}

// renderFrames is render's loop for a body compressed in segments: the
// renderer copies the rows, frame by frame under the store lock in the order
// render reads them, into the segment being filled, and hands it over at
// about segmentSize of estimated text or maxSegmentRows of rows' memory; the
// workers format and compress. The text is the one render formats on its
// own goroutine, byte for byte. dst holds what render formatted before the
// families (target_info).
func (rd *renderer) renderFrames(dst []byte, s *seriesStore, om bool) []byte {
	m := rd.segments
	m.om = om
	for i := range rd.fams {
		fam := &rd.fams[i]
		if fam.hidden {
			continue
		}
		header := true
		// A family's first frame is small: its rows' size sets how many
		// the next frames take, so that a frame does not overshoot its
		// segment (a histogram's 1024 rows make several MiB of text).
		limit := 64
		for pos := 0; ; {
			p := m.part()
			pos = s.copyRowsUpTo(&p.f, fam.id, pos, limit, rd.withTimestamps, rd.classicFallback)
			rows := len(p.f.rows)
			if rows == 0 {
				m.unpart()
				break
			}
			valid, text := textEstimate(&p.f, len(fam.name))
			mem := p.f.size()
			if valid == 0 {
				m.unpart()
			} else {
				p.fam, p.header = *fam, header
				header = false
				rd.series += valid
				m.est += text
				m.rows += mem
				if m.est >= segmentSize || m.rows >= maxSegmentRows {
					dst = m.submit(dst)
				}
			}
			// As many rows as fit what is left of the segment, at this
			// frame's size per row.
			limit = min((segmentSize-m.est)*rows/max(text, 1), (maxSegmentRows-m.rows)*rows/max(mem, 1))
			limit = max(limit, 16)
		}
	}
	if m.slots[m.seq%len(m.slots)].nParts > 0 {
		// What the caller appends (OpenMetrics' "# EOF") follows the
		// rows: the worker formats them after the slot's text, so they
		// go in this segment and the rest in the next.
		dst = m.submit(dst)
	}
	return dst
}

// textEstimate returns how many of f's rows are valid and about how much
// text they format to: a line per sample, of the family's name (nameLen)
// and a suffix, the row's labels and a value. It only cuts segments, so it
// depends on the rows alone: the compressed bytes, and the ETag, do not
// depend on the number of workers.
func textEstimate(f *frame, nameLen int) (valid, size int) {
	for i := range f.rows {
		r := &f.rows[i]
		if !r.valid {
			continue
		}
		valid++
		lines := 1
		switch r.kind {
		case kindHistogram:
			lines = len(r.bounds.leText) + 3 // the buckets, +Inf, sum and count
		case kindExpHistogram:
			lines = 3
		case kindSummary:
			lines = int(r.nCounts) + 2
		}
		size += lines * (nameLen + r.lblLen + 32)
	}
	return valid, size
}
