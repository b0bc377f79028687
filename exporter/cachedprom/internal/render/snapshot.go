package render // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"

import (
	"hash/maphash"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// Body names one body of a snapshot.
type Body int

// The bodies of a snapshot.
const (
	BodyText Body = iota
	BodyOpenMetrics
	BodyProto
	numBodies
)

// body is one format's rendering: its gzip form, and the body itself while
// clients without gzip are around.
type body struct {
	plain  []byte // the uncompressed body when kept, else nil
	kept   bool
	length int // uncompressed
	// gzip is the gzip form, nil when the body was not rendered; gzipBuf
	// owns it outside the Go heap, so a snapshot is freed explicitly
	// (free), when no scrape reads it.
	gzip    []byte
	gzipBuf mem.Buffer
}

// Snapshot is one published rendering. It is immutable once published;
// scrapes only read it.
type Snapshot struct {
	bodies [numBodies]body
	// etag is the prefix of the text and OpenMetrics bodies' ETags,
	// protoETag the protobuf body's; the variant letter is appended.
	etag, protoETag string
	series          int
	hidden          int // series not rendered: their names collide with another family's

	// discarded says the gzip bodies' pages were given back (discard).
	discarded bool

	// readers counts scrapes writing this snapshot's bytes, so the renderer
	// can reuse the buffers of a retired snapshot nobody reads any more.
	readers atomic.Int32
}

// Encoded is one body of a snapshot as a scrape serves it.
type Encoded struct {
	// Plain is the uncompressed body when Kept; otherwise a client without
	// gzip is sent Gzip inflated.
	Plain []byte
	// Gzip is the gzip form; nil when the body was not rendered (the
	// OpenMetrics body without enable_open_metrics, the protobuf body
	// while no client asks for it).
	Gzip []byte
	Kept bool
	Len  int    // the uncompressed length
	ETag string // its prefix: the server appends the variant
}

// Body returns body which.
func (s *Snapshot) Body(which Body) Encoded {
	b := &s.bodies[which]
	etag := s.etag
	if which == BodyProto {
		etag = s.protoETag
	}
	return Encoded{Plain: b.plain, Gzip: b.gzip, Kept: b.kept, Len: b.length, ETag: etag}
}

// Hold registers a scrape reading the snapshot; Release ends it. A holder
// rechecks that the snapshot is still the published one after Hold: one
// retired in between may already be being overwritten.
func (s *Snapshot) Hold() { s.readers.Add(1) }

// Release ends a Hold.
func (s *Snapshot) Release() { s.readers.Add(-1) }

// Series is the number of series the snapshot shows.
func (s *Snapshot) Series() int { return s.series }

// Hidden is the number of series left out because their sample names
// collide with another family's.
func (s *Snapshot) Hidden() int { return s.hidden }

// Size is the number of bytes the snapshot's bodies hold.
func (s *Snapshot) Size() int {
	n := 0
	for i := range s.bodies {
		n += len(s.bodies[i].plain) + len(s.bodies[i].gzip)
	}
	return n
}

// free returns the snapshot's off-heap buffers. Only for a snapshot that is
// not published and has no readers.
func (s *Snapshot) free() {
	s.discarded = true
	for i := range s.bodies {
		s.bodies[i].gzipBuf.Free()
		s.bodies[i].gzip = nil
	}
}

// discard gives the gzip bodies' pages back, keeping their mappings for
// the next render. Only for a snapshot that is not published and has no
// readers.
func (s *Snapshot) discard() {
	for i := range s.bodies {
		s.bodies[i].gzipBuf.Discard()
		s.bodies[i].gzip = nil
	}
	s.discarded = true
}

// Snapshots renders snapshots and keeps the renderer's reusable state
// between renders: the buffers of retired snapshots, the gzip writer, the
// segment compressor, and the length of each body last time.
type Snapshots struct {
	rd         Renderer
	etagPrefix string
	zw         *gzip.Writer
	retired    []*Snapshot // unpublished snapshots whose buffers may be reused
	chunk      []byte      // chunk buffer of streamed renders
	keep       keepSink    // collects the body being streamed for identity clients
	// lastLen is the uncompressed length of each format's last body
	// (text, OpenMetrics, protobuf) and lastRows the store's rows when it
	// was rendered: scaled to the rows now (expectedLen), they size the kept
	// body and choose between one and several compressing goroutines.
	lastLen, lastRows [numBodies]int
	// rows is the store's row count as this render began.
	rows int

	// segments compresses large bodies on several goroutines (segments.go).
	segments segmentCompressor
	// Workers overrides the number of compressing goroutines; 0 means
	// GOMAXPROCS, up to maxCompressWorkers. Set by tests.
	Workers int
	// work is the compressing workers' time in the last render and waited
	// the renderer's time waiting for them: the render's processor time
	// is about its duration plus work less waited.
	work, waited time.Duration
}

// NewSnapshots returns a snapshot renderer. etagPrefix starts every ETag:
// a per-process nonce keeps ETags from an earlier process from matching a
// different body after a restart.
func NewSnapshots(opts Options, etagPrefix string) *Snapshots {
	r := &Snapshots{etagPrefix: etagPrefix}
	r.rd.setOptions(opts)
	return r
}

// Wants says what a render makes besides the text body's gzip form.
type Wants struct {
	// OpenMetrics renders the OpenMetrics body (enable_open_metrics).
	OpenMetrics bool
	// Proto renders the protobuf body: a client asked for it lately.
	Proto bool
	// KeepText, KeepOpenMetrics and KeepProto keep the uncompressed body,
	// if at most MaxKeptBody: a client without gzip asked for it lately.
	KeepText, KeepOpenMetrics, KeepProto bool
}

// Work is the compressing workers' processor time in the last render, and
// Waited the renderer's time waiting for them: the render's processor time
// is about its duration plus Work less Waited.
func (r *Snapshots) Work() time.Duration { return r.work }

// Waited is the time the last render waited for its compressing workers.
func (r *Snapshots) Waited() time.Duration { return r.waited }

// Render renders the store into a new snapshot, to be published.
func (r *Snapshots) Render(s *store.Store, w Wants) *Snapshot {
	if r.zw == nil {
		r.zw, _ = gzip.NewWriterLevel(nil, gzipLevel)
	}
	snap := &Snapshot{}
	r.work, r.waited = 0, 0
	r.rows = s.Sizes().Rows
	// Reuse the buffers of a retired snapshot no scrape is reading: bodies
	// are large, and allocating (and zeroing) them per render would make
	// memory and GC work grow with every render.
	old := r.reusable()
	for i := range snap.bodies {
		snap.bodies[i].gzipBuf = old.bodies[i].gzipBuf
	}
	r.body(snap, old, BodyText, s, w.KeepText, (*Renderer).Text)
	snap.series, snap.hidden = r.rd.series, r.rd.hidden
	if w.OpenMetrics {
		r.body(snap, old, BodyOpenMetrics, s, w.KeepOpenMetrics, (*Renderer).OpenMetrics)
	} else {
		snap.bodies[BodyOpenMetrics].gzipBuf.Free()
	}
	if w.Proto {
		r.body(snap, old, BodyProto, s, w.KeepProto, (*Renderer).Proto)
		var h maphash.Hash
		h.SetSeed(etagSeed)
		_, _ = h.Write(snap.bodies[BodyProto].gzip)
		snap.protoETag = r.etagPrefix + strconv.FormatUint(h.Sum64(), 36) + "-"
	} else {
		snap.bodies[BodyProto].gzipBuf.Free()
		r.lastLen[BodyProto], r.lastRows[BodyProto] = 0, 0
		r.rd.proto.release()
	}
	// The ETag is derived from the content (gzip output is deterministic),
	// so a render of unchanged data keeps it and conditional requests still
	// match. Hashing the compressed form is cheap: it is a small fraction of
	// the body.
	var h maphash.Hash
	h.SetSeed(etagSeed)
	_, _ = h.Write(snap.bodies[BodyText].gzip)
	_, _ = h.Write(snap.bodies[BodyOpenMetrics].gzip)
	snap.etag = r.etagPrefix + strconv.FormatUint(h.Sum64(), 36) + "-"
	return snap
}

// etagSeed is fixed for the process so equal content hashes equally.
var etagSeed = maphash.MakeSeed()

// body renders body which of snap, reusing old's uncompressed buffer.
func (r *Snapshots) body(snap, old *Snapshot, which Body, s *store.Store, keep bool, render func(*Renderer, []byte, *store.Store) []byte) {
	b := &snap.bodies[which]
	b.plain, b.kept, b.length = r.encode(which, old.bodies[which].plain, &b.gzipBuf, keep, func(dst []byte) []byte { return render(&r.rd, dst, s) })
	b.gzip = b.gzipBuf.Bytes()
}

// ParallelMinBody is the expected body length (expectedLen) above which
// segments are used. Smaller bodies take milliseconds to compress on one
// core; starting workers would not pay. It is above MaxKeptBody, so a body
// collected for identity clients (keepSink) is always compressed on the
// renderer's goroutine.
const ParallelMinBody = 2 * MaxKeptBody

// encode streams one format into the compressor in chunks and keeps the
// chunk buffer for next time. With keep it also collects the body for
// identity clients, if the body is expected to fit in MaxKeptBody and as
// long as it does: collecting from the stream (instead of rendering the
// whole body, then compressing it) means a store that grew past the limit
// never holds a body it will not keep.
func (r *Snapshots) encode(which Body, textBuf []byte, gz *mem.Buffer, keep bool, renderBody func([]byte) []byte) (body []byte, kept bool, length int) {
	r.keep = keepSink{}
	expected := r.expectedLen(which)
	if keep && expected <= MaxKeptBody {
		if cap(textBuf) < expected {
			// Size for the expected body plus growth room instead of
			// letting append double its way up (and leave the halves as
			// garbage).
			textBuf = make([]byte, 0, min(expected+expected/8, MaxKeptBody))
		}
		r.keep = keepSink{on: true, buf: textBuf[:0]}
	}
	if workers := CompressWorkers(r.Workers); workers > 1 && expected > ParallelMinBody {
		// Large bodies (never kept: ParallelMinBody > MaxKeptBody) are
		// compressed in segments on several goroutines.
		var work, waited time.Duration
		length, work, waited = r.rd.out.segmented(gz, &r.segments, workers, renderBody)
		r.work += work
		r.waited += waited
	} else {
		if slices.Max(r.lastLen[:]) <= ParallelMinBody {
			// No body is large any more.
			r.segments.release()
		}
		r.chunk, length = r.rd.out.compressed(gz, r.chunk, r.zw, &r.keep, renderBody)
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
func (r *Snapshots) expectedLen(which Body) int {
	if last := r.lastRows[which]; last > 0 {
		return int(int64(r.lastLen[which]) * int64(r.rows) / int64(last))
	}
	return max(r.lastLen[which], r.rows*minRowBytes)
}

// minRowBytes is less than any row's text: a counter's one line with its
// name, a label and a value. A histogram row takes a line per bucket.
const minRowBytes = 48

// reusable returns a retired snapshot without readers (its buffers become
// the new snapshot's), or an empty one.
func (r *Snapshots) reusable() *Snapshot {
	for i, s := range r.retired {
		if s.readers.Load() == 0 {
			r.retired = append(r.retired[:i], r.retired[i+1:]...)
			return s
		}
	}
	return &Snapshot{}
}

// SparesRead reports whether there are retired snapshots and a scrape reads
// every one of them: the next render would take a fresh mapping.
func (r *Snapshots) SparesRead() bool {
	for _, s := range r.retired {
		if s.readers.Load() == 0 {
			return false
		}
	}
	return len(r.retired) > 0
}

// Retire records a snapshot that is no longer published. One spare is
// kept, its mappings without their pages (DiscardSpares): holding more
// would multiply memory for large bodies, and a scrape slower than a render
// interval only costs a fresh buffer. Older ones are freed once no scrape
// reads them; one still being written to a client stays until a later
// render finds it unread.
func (r *Snapshots) Retire(s *Snapshot) {
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
	r.DiscardSpares()
}

// DiscardSpares gives back the pages of the retired snapshots nobody reads:
// the spare keeps its mappings for the next render, but not its pages. A
// body of a million series is about 130 MB of gzip, and between renders (at
// least half the time: the render loop waits as long again as a render
// took) the spare would hold it resident for nothing. The next render
// writes the pages again and faults each in: writing 130 MB took 60-75 ms
// longer than into resident pages (internal/offheap BenchmarkRewrite),
// against 6 to 9 s of render at that size.
func (r *Snapshots) DiscardSpares() {
	for _, s := range r.retired {
		if !s.discarded && s.readers.Load() == 0 {
			s.discard()
		}
	}
}

// FreeAll frees the retired snapshots and published, which must no longer
// be published. One still read (a scrape outliving the shutdown deadline)
// is left to the process' end rather than unmapped under its reader.
func (r *Snapshots) FreeAll(published *Snapshot) {
	for _, s := range append(r.retired, published) {
		if s != nil && s.readers.Load() == 0 {
			s.free()
		}
	}
	r.retired = nil
}
