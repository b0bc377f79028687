package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"hash/maphash"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
)

// snapshot is one published rendering. It is immutable once published;
// scrapes only read it.
type snapshot struct {
	text, textGzip []byte
	om, omGzip     []byte // nil unless enable_open_metrics
	// proto and protoGzip are the protobuf exposition, nil unless a client
	// asked for it within protoTTL; protoETag is its own ETag (prefix).
	proto, protoGzip []byte
	protoKept        bool
	protoLen         int
	protoETag        string
	protoGzipBuf     offHeapBuffer
	// textKept/omKept say whether the uncompressed body was kept: it is
	// only while clients without gzip are around (see identityTTL).
	textKept, omKept bool
	textLen, omLen   int    // uncompressed lengths
	etag             string // prefix; the variant letter is appended
	// textGzipBuf and omGzipBuf own textGzip and omGzip: they are outside
	// the Go heap, so a snapshot is freed explicitly (free), when no
	// scrape reads it.
	textGzipBuf, omGzipBuf offHeapBuffer
	series                 int
	hidden                 int // series not rendered: their names collide with another family's

	// discarded says the gzip bodies' pages were given back (discard).
	discarded bool

	// readers counts scrapes writing this snapshot's bytes, so the renderer
	// can reuse the buffers of a retired snapshot nobody reads any more.
	readers atomic.Int32
}

// acquire returns the published snapshot with a reader registered, or nil.
// The pointer is re-checked after registering: a snapshot retired in
// between may already be being overwritten, so it is released and the new
// one tried. A retired snapshot can never be acquired again.
func (e *cachedExporter) acquire() *snapshot {
	for {
		s := e.snapshot.Load()
		if s == nil {
			return nil
		}
		s.readers.Add(1)
		if e.snapshot.Load() == s {
			return s
		}
		s.readers.Add(-1)
	}
}

func (s *snapshot) size() int {
	return len(s.text) + len(s.textGzip) + len(s.om) + len(s.omGzip) + len(s.proto) + len(s.protoGzip)
}

// free returns the snapshot's off-heap buffers. Only for a snapshot that is
// not published and has no readers.
func (s *snapshot) free() {
	s.discarded = true
	s.textGzipBuf.free()
	s.omGzipBuf.free()
	s.protoGzipBuf.free()
	s.textGzip, s.omGzip, s.protoGzip = nil, nil, nil
}

// snapshotRenderer keeps the renderer's reusable state between renders.
type snapshotRenderer struct {
	store   *seriesStore
	rd      renderer
	zw      *gzip.Writer
	retired []*snapshot // unpublished snapshots whose buffers may be reused
	chunk   []byte      // chunk buffer of streamed renders
	keep    keepSink    // collects the body being streamed for identity clients
	// lastLen is the uncompressed length of each format's last body
	// (text, OpenMetrics, protobuf) and lastRows the store's rows when it
	// was rendered: scaled to the rows now (expectedLen), they size the kept
	// body and choose between one and several compressing goroutines.
	lastLen, lastRows [numBodies]int
	// rows is the store's row count as this render began.
	rows int

	// segments compresses large bodies on several goroutines (segments.go).
	segments segmentCompressor
	// workers overrides the number of compressing goroutines; 0 means
	// GOMAXPROCS, up to maxCompressWorkers. Set by tests.
	workers int
	// work is the compressing workers' time in the last render and waited
	// the renderer's time waiting for them: the render's processor time
	// is about its duration plus work less waited.
	work, waited time.Duration
}

func (r *snapshotRenderer) render(e *cachedExporter) *snapshot {
	r.rd.withTimestamps = e.cfg.SendTimestamps
	r.rd.classicFallback = e.cfg.NativeHistograms.ClassicFallback
	r.store = e.store
	if r.zw == nil {
		r.zw, _ = gzip.NewWriterLevel(nil, gzipLevel)
	}
	snap := &snapshot{}
	r.work, r.waited = 0, 0
	r.rows = e.store.liveRows()
	// Reuse the buffers of a retired snapshot no scrape is reading: bodies
	// are large, and allocating (and zeroing) them per render would make
	// memory and GC work grow with every render.
	old := r.reusable()
	now := e.clock.Now().UnixNano()
	keepText := now-e.textIdentitySeen.Load() < int64(identityTTL)
	snap.textGzipBuf, snap.omGzipBuf, snap.protoGzipBuf = old.textGzipBuf, old.omGzipBuf, old.protoGzipBuf
	snap.text, snap.textKept, snap.textLen = r.body(bodyText, old.text, &snap.textGzipBuf, keepText, r.rd.renderText)
	snap.textGzip = snap.textGzipBuf.bytes()
	snap.series, snap.hidden = r.rd.series, r.rd.hidden
	if e.cfg.EnableOpenMetrics {
		keepOM := now-e.omIdentitySeen.Load() < int64(identityTTL)
		snap.om, snap.omKept, snap.omLen = r.body(bodyOpenMetrics, old.om, &snap.omGzipBuf, keepOM, r.rd.renderOpenMetrics)
		snap.omGzip = snap.omGzipBuf.bytes()
	} else {
		snap.omGzipBuf.free()
	}
	if now-e.protoSeen.Load() < int64(protoTTL) {
		keepProto := now-e.protoIdentitySeen.Load() < int64(identityTTL)
		snap.proto, snap.protoKept, snap.protoLen = r.body(bodyProto, old.proto, &snap.protoGzipBuf, keepProto, r.rd.renderProto)
		snap.protoGzip = snap.protoGzipBuf.bytes()
		var h maphash.Hash
		h.SetSeed(etagSeed)
		_, _ = h.Write(snap.protoGzip)
		snap.protoETag = e.etagPrefix + strconv.FormatUint(h.Sum64(), 36) + "-"
	} else {
		snap.protoGzipBuf.free()
		r.lastLen[bodyProto], r.lastRows[bodyProto] = 0, 0
		r.rd.proto.release()
	}
	// The ETag is derived from the content (gzip output is deterministic),
	// so a render of unchanged data keeps it and conditional requests still
	// match. Hashing the compressed form is cheap: it is a small fraction of
	// the body.
	var h maphash.Hash
	h.SetSeed(etagSeed)
	_, _ = h.Write(snap.textGzip)
	_, _ = h.Write(snap.omGzip)
	snap.etag = e.etagPrefix + strconv.FormatUint(h.Sum64(), 36) + "-"
	return snap
}

// The bodies of a snapshot, indexes of snapshotRenderer.lastLen.
const (
	bodyText = iota
	bodyOpenMetrics
	bodyProto
	numBodies
)

// protoTTL is how long the protobuf body is rendered after the last client
// that asked for it. Prometheus asks for it only with native histograms
// enabled (2.42 and later, and 3.x); other clients never pay its render.
const protoTTL = 10 * time.Minute

// etagSeed is fixed for the process so equal content hashes equally.
var etagSeed = maphash.MakeSeed()

// identityTTL is how long the uncompressed body is kept after the last
// client that asked for it. Prometheus always asks for gzip, so normally
// only the compressed form (a small fraction of the size) is held.
const identityTTL = 10 * time.Minute

// maxKeptBody is the largest uncompressed body kept for identity clients.
// A kept body costs about twice its size in heap (the published snapshot
// and the retired spare whose buffer the next render reuses), and more in
// RSS at the default GOGC: at 100k spanmetrics series (hundreds of MB of
// text, README "Performance") that is gigabytes, set off by a single curl
// or readiness probe without gzip and held for identityTTL. Inflating the
// gzip form instead costs an identity client time in proportion to the
// body, so keeping pays only for small bodies.
const maxKeptBody = 4 << 20

// body streams one format into the compressor in chunks and keeps the chunk
// buffer for next time. With keep it also collects the body for identity
// clients, if the body is expected to fit in maxKeptBody and as long as it
// does: collecting from the stream (instead of rendering the whole body,
// then compressing it) means a store that grew past the limit never holds a
// body it will not keep.
func (r *snapshotRenderer) body(which int, textBuf []byte, gz *offHeapBuffer, keep bool, render func([]byte, *seriesStore) []byte) (body []byte, kept bool, length int) {
	r.keep = keepSink{}
	expected := r.expectedLen(which)
	if keep && expected <= maxKeptBody {
		if cap(textBuf) < expected {
			// Size for the expected body plus growth room instead of
			// letting append double its way up (and leave the halves as
			// garbage).
			textBuf = make([]byte, 0, min(expected+expected/8, maxKeptBody))
		}
		r.keep = keepSink{on: true, buf: textBuf[:0]}
	}
	renderBody := func(dst []byte) []byte { return render(dst, r.store) }
	if workers := compressWorkers(r.workers); workers > 1 && expected > parallelMinBody {
		// Large bodies (never kept: parallelMinBody > maxKeptBody) are
		// compressed in segments on several goroutines.
		var work, waited time.Duration
		length, work, waited = r.rd.renderSegments(gz, &r.segments, workers, renderBody)
		r.work += work
		r.waited += waited
	} else {
		if slices.Max(r.lastLen[:]) <= parallelMinBody {
			// No body is large any more.
			r.segments.release()
		}
		r.chunk, length = r.rd.renderCompressed(gz, r.chunk, r.zw, &r.keep, renderBody)
	}
	r.lastLen[which], r.lastRows[which] = length, r.rows
	body, kept = r.keep.buf, r.keep.on
	r.keep = keepSink{}
	if !kept {
		body = nil
	}
	return body, kept, length
}

// expectedLen is the uncompressed length the body of format which is
// expected to have now: the last body's length per row scaled to the rows
// now, or at least minRowBytes a row when the last body had no rows (the
// first render after a start, or after the store emptied). Deciding on the
// last body's length alone left the first render of a burst, the one that
// makes a million new series visible, to one core: the body before it was
// empty.
func (r *snapshotRenderer) expectedLen(which int) int {
	if last := r.lastRows[which]; last > 0 {
		return int(int64(r.lastLen[which]) * int64(r.rows) / int64(last))
	}
	return max(r.lastLen[which], r.rows*minRowBytes)
}

// minRowBytes is less than any row's text: a counter's one line with its
// name, a label and a value. A histogram row takes a line per bucket.
const minRowBytes = 48

// keepSink passes the streamed body on to the compressor and, while on,
// collects a copy; it turns itself off (and lets the copy go) when the body
// outgrows maxKeptBody.
type keepSink struct {
	w   io.Writer
	on  bool
	buf []byte
}

func (k *keepSink) Write(p []byte) (int, error) {
	if k.on {
		if len(k.buf)+len(p) > maxKeptBody {
			k.on, k.buf = false, nil
		} else {
			k.buf = append(k.buf, p...)
		}
	}
	return k.w.Write(p)
}

// reusable returns a retired snapshot without readers (its buffers become
// the new snapshot's), or an empty one.
func (r *snapshotRenderer) reusable() *snapshot {
	for i, s := range r.retired {
		if s.readers.Load() == 0 {
			r.retired = append(r.retired[:i], r.retired[i+1:]...)
			return s
		}
	}
	return &snapshot{}
}

// sparesRead reports whether there are retired snapshots and a scrape reads
// every one of them: the next render would take a fresh mapping (reusable).
func (r *snapshotRenderer) sparesRead() bool {
	for _, s := range r.retired {
		if s.readers.Load() == 0 {
			return false
		}
	}
	return len(r.retired) > 0
}

// retire records a snapshot that is no longer published. One spare is
// kept, its mappings without their pages (discardSpares): holding more
// would multiply memory for large bodies, and a scrape slower than a render
// interval only costs a fresh buffer. Older ones are freed once no scrape
// reads them; one still being written to a client stays until a later
// render finds it unread.
func (r *snapshotRenderer) retire(s *snapshot) {
	if s == nil {
		return
	}
	r.retired = append(r.retired, s)
	last := len(r.retired) - 1
	kept := r.retired[:0]
	for i, old := range r.retired {
		if i != last && old.readers.Load() == 0 {
			old.free()
			continue
		}
		kept = append(kept, old)
	}
	clear(r.retired[len(kept):])
	r.retired = kept
	r.discardSpares()
}

// discardSpares gives back the pages of the retired snapshots nobody reads:
// the spare keeps its mappings for the next render, but not its pages. A
// body of a million series is about 130 MB of gzip, and between renders (at
// least half the time: step waits as long again as a render took) the spare
// would hold it resident for nothing. The next render writes the pages again
// and faults each in: writing 130 MB took 60-75 ms longer than into resident
// pages (internal/offheap BenchmarkRewrite), against 6 to 9 s of render at
// that size.
func (r *snapshotRenderer) discardSpares() {
	for _, s := range r.retired {
		if !s.discarded && s.readers.Load() == 0 {
			s.textGzipBuf.discard()
			s.omGzipBuf.discard()
			s.protoGzipBuf.discard()
			s.textGzip, s.omGzip, s.protoGzip = nil, nil, nil
			s.discarded = true
		}
	}
}

// freeAll frees the retired snapshots and published, which must no longer
// be published. One still read (a scrape outliving the shutdown deadline)
// is left to the process' end rather than unmapped under its reader.
func (r *snapshotRenderer) freeAll(published *snapshot) {
	for _, s := range append(r.retired, published) {
		if s != nil && s.readers.Load() == 0 {
			s.free()
		}
	}
	r.retired = nil
}

// gzipLevel favours speed: the exposition is very repetitive, so level 1
// already compresses it well, and compression runs once per render.
const gzipLevel = gzip.BestSpeed

// renderCompressed builds the gzip form into gz: the body is rendered in
// chunks straight into the compressor, through keep (which may collect a
// copy). It returns the length of the uncompressed body.
func (rd *renderer) renderCompressed(gz *offHeapBuffer, scratch []byte, zw *gzip.Writer, keep *keepSink, render func([]byte) []byte) (scratchOut []byte, bodyLen int) {
	gz.reset()
	zw.Reset(gz)
	keep.w = zw
	rd.sink, rd.written = keep, 0
	rest := render(scratch[:0])
	rest = rd.flushChunk(rest, true)
	bodyLen = rd.written
	rd.sink = nil
	_ = zw.Close()
	return rest, bodyLen
}

// renderSegments builds the gzip form into gz from segments compressed by
// workers goroutines (segments.go). It returns the length of the
// uncompressed body, the workers' time on it and the time the renderer
// waited for them.
func (rd *renderer) renderSegments(gz *offHeapBuffer, m *segmentCompressor, workers int, render func([]byte) []byte) (bodyLen int, work, waited time.Duration) {
	rd.segments, rd.written = m, 0
	rest := render(m.start(gz, workers))
	bodyLen = rd.written + len(rest)
	rd.segments = nil
	work, waited = m.finish(rest)
	return bodyLen, work, waited
}
