package render // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
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
// Compressing is about 85% of a single-core render and would otherwise run
// on the renderer's one core while the others idle.
//
// The renderer formats each segment straight into the buffer of a ring slot
// and hands it over; the slot comes back to it only once the segment's
// output was appended, so at most len(slots) segments (input and output) are
// held at once, whatever the body's size.

// segmentSize is the uncompressed size of one segment. Each segment starts
// with an empty dictionary: on a spanmetrics-shaped body of 62 MB the gzip
// form was 0.95% larger than the single-core one with 1 MiB segments (then
// separate gzip members), 0.49% with 2 MiB and 0.17% with 4 MiB
// (segments_test.go bounds it at 1%). 2 MiB keeps the buffers held small
// (segmentSize × slotsPerWorker × workers) and the hand-over rare.
const segmentSize = 2 << 20

// gzipLevel favours speed: the exposition is very repetitive, so level 1
// already compresses it well, and compression runs once per render.
const gzipLevel = gzip.BestSpeed

// maxCompressWorkers bounds the workers. One goroutine formats the body and
// compressing is about 85% of a single-core render (CPU profile of
// BenchmarkRenderSegments at 100k OTLP series), so about 6 workers keep pace
// with the formatter; more would only hold more buffers (2 segments each).
const maxCompressWorkers = 8

// slotsPerWorker is how many segments each worker may have in flight: one
// being compressed and one queued, so a worker never waits for the
// formatter to finish the next segment.
const slotsPerWorker = 2

// CompressWorkers is how many workers compress a body: GOMAXPROCS up to
// maxCompressWorkers, or want when set (tests). 1 means the body is
// compressed on the renderer's goroutine, as one deflate stream.
func CompressWorkers(want int) int {
	if want > 0 {
		return want
	}
	return min(runtime.GOMAXPROCS(0), maxCompressWorkers)
}

// segmentSlot is one segment: its uncompressed bytes, then its deflate
// output and CRC-32.
type segmentSlot struct {
	in   []byte
	out  bytes.Buffer
	crc  uint32
	busy bool          // handed to the workers, output not yet appended
	done chan struct{} // capacity 1: a worker signals the segment compressed
	took time.Duration // the worker's time on it
}

// segmentCompressor compresses one body at a time in segments. Its buffers
// and deflate writers are kept between renders; its goroutines live for one
// body.
type segmentCompressor struct {
	slots  []*segmentSlot
	fws    []*flate.Writer
	header []byte // the gzip header, as the single-core gzip.Writer writes it
	jobs   chan *segmentSlot
	wg     sync.WaitGroup
	dst    *mem.Buffer
	seq    int           // segments handed over in this body
	crc    uint32        // CRC-32 of the segments appended so far
	size   uint32        // their length, modulo 2^32 as gzip records it
	work   time.Duration // the workers' time on this body
	wait   time.Duration // the renderer's time waiting for segments
}

// start begins a body compressed into dst by workers goroutines and
// returns the buffer to format the first segment into.
func (m *segmentCompressor) start(dst *mem.Buffer, workers int) []byte {
	if m.header == nil {
		// The header the single-core path writes (gzip.Writer writes it
		// on the first Write), so the two forms differ only in the
		// compressed data.
		var hdr bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&hdr, gzipLevel)
		_, _ = zw.Write(nil)
		m.header = hdr.Bytes()
	}
	dst.Reset()
	_, _ = dst.Write(m.header)
	m.dst, m.seq, m.crc, m.size, m.work, m.wait = dst, 0, 0, 0, 0, 0
	for len(m.fws) < workers {
		fw, _ := flate.NewWriter(nil, gzipLevel)
		m.fws = append(m.fws, fw)
	}
	n := workers * slotsPerWorker
	for len(m.slots) < n {
		// Sized for a segment and the row that crosses segmentSize, so the
		// formatter does not double its way up to it.
		m.slots = append(m.slots, &segmentSlot{in: make([]byte, 0, segmentSize+segmentSize/16), done: make(chan struct{}, 1)})
	}
	// Slots beyond this body's ring (the worker count went down) are let go.
	clear(m.slots[n:])
	m.slots = m.slots[:n]
	m.jobs = make(chan *segmentSlot, n)
	m.wg.Add(workers)
	for _, fw := range m.fws[:workers] {
		go m.compress(fw)
	}
	m.fws = m.fws[:workers]
	return m.slots[0].in[:0]
}

// compress is one worker: it deflates segments until the body ends.
func (m *segmentCompressor) compress(fw *flate.Writer) {
	defer m.wg.Done()
	for s := range m.jobs {
		began := time.Now()
		s.out.Reset()
		fw.Reset(&s.out)
		_, _ = fw.Write(s.in)
		// A sync flush, not Close: the block stays non-final and the
		// output ends on a byte boundary, so the next segment's blocks
		// follow it in one deflate stream.
		_ = fw.Flush()
		s.crc = crc32.ChecksumIEEE(s.in)
		s.took = time.Since(began)
		s.done <- struct{}{}
	}
}

// submit hands over a formatted segment (dst, the buffer start or the last
// submit returned) and returns the buffer for the next one, once the slot
// it belongs to is free: its previous segment's output appended.
func (m *segmentCompressor) submit(dst []byte) []byte {
	s := m.slots[m.seq%len(m.slots)]
	s.in, s.busy = dst, true
	m.jobs <- s
	m.seq++
	next := m.slots[m.seq%len(m.slots)]
	m.collect(next)
	return next.in[:0]
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
	m.crc = crc32Combine(m.crc, s.crc, int64(len(s.in)))
	m.size += uint32(len(s.in)) //nolint:gosec // gzip records the length modulo 2^32
	m.work += s.took
	s.busy = false
}

// finalBlock is an empty final deflate block (fixed Huffman codes, only
// the end-of-block symbol): it ends the stream the segments make.
var finalBlock = []byte{0x03, 0x00}

// finish submits the last segment (dst), appends what is in flight in
// order, ends the deflate stream and writes the gzip trailer, and stops the
// workers. It returns the workers' time on the body and the time the
// renderer waited for them.
func (m *segmentCompressor) finish(dst []byte) (work, waited time.Duration) {
	if len(dst) > 0 {
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
	return m.work, m.wait
}

// release lets the buffers and writers go: the body went back under
// ParallelMinBody, and holding them for a size the store may never reach
// again would be memory for nothing.
func (m *segmentCompressor) release() {
	m.slots, m.fws = nil, nil
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
