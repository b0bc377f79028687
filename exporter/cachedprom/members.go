package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"bytes"
	"runtime"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
)

// A large body is compressed on several cores: cut into members of about
// memberSize uncompressed bytes, each compressed on its own by one of a few
// workers and appended in order. A gzip stream may hold several members
// (RFC 1952, 2.2) and every gzip reader in use decodes them as one body: Go's
// gzip.Reader (Prometheus, this package's inflation for identity clients),
// curl, browsers. Compressing is about two thirds of a render and runs
// on one core otherwise, while the renderer formats on another.
//
// The renderer formats each member straight into the buffer of a ring slot
// and hands it over; the slot comes back to it only once the member's output
// was appended, so at most len(slots) members (input and output) are held at
// once, whatever the body's size.

// memberSize is the uncompressed size of one member. Each member starts with
// an empty dictionary and has an 18-byte header and trailer: on a
// spanmetrics-shaped body of 62 MB the members' gzip form was 0.95% larger
// than one member's with 1 MiB members, 0.49% with 2 MiB and 0.17% with
// 4 MiB (members_test.go bounds it at 1%). 2 MiB keeps the buffers held
// small (memberSize × slotsPerWorker × workers) and the hand-over rare.
const memberSize = 2 << 20

// parallelMinBody is the last body's length above which members are used.
// Smaller bodies take milliseconds to compress on one core; starting workers
// would not pay. It is at least maxKeptBody, so a body collected for
// identity clients (keepSink) is always compressed in one member.
const parallelMinBody = 2 * maxKeptBody

// maxCompressWorkers bounds the workers. One goroutine formats the body and
// compressing is about 85% of a single-core render (CPU profile of
// BenchmarkRenderMembers at 100k OTLP series), so about 6 workers keep pace
// with the formatter; more would only hold more buffers (2 members each).
const maxCompressWorkers = 8

// slotsPerWorker is how many members each worker may have in flight: one
// being compressed and one queued, so a worker never waits for the
// formatter to finish the next member.
const slotsPerWorker = 2

// compressWorkers is how many workers compress a body: GOMAXPROCS up to
// maxCompressWorkers, or want when set (tests). 1 means one member, on the
// renderer's goroutine.
func compressWorkers(want int) int {
	if want > 0 {
		return want
	}
	return min(runtime.GOMAXPROCS(0), maxCompressWorkers)
}

// memberSlot is one member: its uncompressed bytes, then its gzip output.
type memberSlot struct {
	in   []byte
	out  bytes.Buffer
	busy bool          // handed to the workers, output not yet appended
	done chan struct{} // capacity 1: a worker signals the member compressed
	took time.Duration // the worker's time on it
}

// memberCompressor compresses one body at a time as members. Its buffers and
// gzip writers are kept between renders; its goroutines live for one body.
type memberCompressor struct {
	slots []*memberSlot
	zws   []*gzip.Writer
	jobs  chan *memberSlot
	wg    sync.WaitGroup
	dst   *offHeapBuffer
	seq   int           // members handed over in this body
	work  time.Duration // the workers' time on this body
	wait  time.Duration // the renderer's time waiting for members
}

// start begins a body compressed into dst by workers goroutines and
// returns the buffer to format the first member into.
func (m *memberCompressor) start(dst *offHeapBuffer, workers int) []byte {
	dst.reset()
	m.dst, m.seq, m.work, m.wait = dst, 0, 0, 0
	for len(m.zws) < workers {
		zw, _ := gzip.NewWriterLevel(nil, gzipLevel)
		m.zws = append(m.zws, zw)
	}
	n := workers * slotsPerWorker
	for len(m.slots) < n {
		// Sized for a member and the row that crosses memberSize, so the
		// formatter does not double its way up to it.
		m.slots = append(m.slots, &memberSlot{in: make([]byte, 0, memberSize+memberSize/16), done: make(chan struct{}, 1)})
	}
	// Slots beyond this body's ring (the worker count went down) are let go.
	clear(m.slots[n:])
	m.slots = m.slots[:n]
	m.jobs = make(chan *memberSlot, n)
	m.wg.Add(workers)
	for _, zw := range m.zws[:workers] {
		go m.compress(zw)
	}
	m.zws = m.zws[:workers]
	return m.slots[0].in[:0]
}

// compress is one worker: it compresses members until the body ends.
func (m *memberCompressor) compress(zw *gzip.Writer) {
	defer m.wg.Done()
	for s := range m.jobs {
		began := time.Now()
		s.out.Reset()
		zw.Reset(&s.out)
		_, _ = zw.Write(s.in)
		_ = zw.Close()
		s.took = time.Since(began)
		s.done <- struct{}{}
	}
}

// submit hands over a formatted member (dst, the buffer start or the last
// submit returned) and returns the buffer for the next one, once the slot
// it belongs to is free: its previous member's output appended.
func (m *memberCompressor) submit(dst []byte) []byte {
	s := m.slots[m.seq%len(m.slots)]
	s.in, s.busy = dst, true
	m.jobs <- s
	m.seq++
	next := m.slots[m.seq%len(m.slots)]
	m.collect(next)
	return next.in[:0]
}

// collect waits for the member in s, if any, and appends its output. Slots
// are collected in the order they were submitted, so members are appended
// in the body's order.
func (m *memberCompressor) collect(s *memberSlot) {
	if !s.busy {
		return
	}
	began := time.Now()
	<-s.done
	m.wait += time.Since(began)
	_, _ = m.dst.Write(s.out.Bytes())
	m.work += s.took
	s.busy = false
}

// finish submits the last member (dst; an empty body is one empty member,
// still valid gzip), appends what is in flight in order and stops the
// workers. It returns the workers' time on the body and the time the
// renderer waited for them.
func (m *memberCompressor) finish(dst []byte) (work, waited time.Duration) {
	if len(dst) > 0 || m.seq == 0 {
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
	m.jobs, m.dst = nil, nil
	return m.work, m.wait
}

// release lets the buffers and writers go: the body went back under
// parallelMinBody, and holding them for a size the store may never reach
// again would be memory for nothing.
func (m *memberCompressor) release() {
	m.slots, m.zws = nil, nil
}
