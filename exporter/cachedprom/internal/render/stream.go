package render // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"

import (
	"io"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/mem"
)

// output is where a body being rendered goes: accumulated in the caller's
// buffer (nothing set), streamed to a sink in chunks of about streamChunk
// bytes, so that the gzip-only form is built without ever holding the
// uncompressed body, or handed in segments of about segmentSize bytes to
// the compressor that works on other goroutines (segments.go).
type output struct {
	sink     io.Writer
	segments *segmentCompressor
	written  int // bytes handed over so far
}

// streamChunk is the size of the pieces handed to the sink; big enough to
// amortise the call, small enough to stay in cache.
const streamChunk = 256 << 10

// flush hands dst over once it is large enough, or with force whatever it
// holds, and returns the buffer to go on with.
func (o *output) flush(dst []byte, force bool) []byte {
	if o.segments != nil {
		if force || len(dst) < segmentSize {
			return dst // the last segment is handed over by finish
		}
		o.written += len(dst)
		return o.segments.submit(dst)
	}
	if o.sink == nil || (!force && len(dst) < streamChunk) {
		return dst
	}
	_, _ = o.sink.Write(dst) // the sink is a gzip writer over a bytes.Buffer
	o.written += len(dst)
	return dst[:0]
}

// compressed builds the gzip form into gz: the body is rendered in chunks
// straight into the compressor, through keep (which may collect a copy). It
// returns the length of the uncompressed body.
func (o *output) compressed(gz *mem.Buffer, scratch []byte, zw *gzip.Writer, keep *keepSink, render func([]byte) []byte) (scratchOut []byte, bodyLen int) {
	gz.Reset()
	zw.Reset(gz)
	keep.w = zw
	o.sink, o.written = keep, 0
	rest := render(scratch[:0])
	rest = o.flush(rest, true)
	bodyLen = o.written
	o.sink = nil
	_ = zw.Close()
	return rest, bodyLen
}

// segmented builds the gzip form into gz from segments compressed by
// workers goroutines (segments.go). It returns the length of the
// uncompressed body, the workers' time on it and the time the renderer
// waited for them.
func (o *output) segmented(gz *mem.Buffer, m *segmentCompressor, workers int, render func([]byte) []byte) (bodyLen int, work, waited time.Duration) {
	o.segments, o.written = m, 0
	rest := render(m.start(gz, workers))
	bodyLen = o.written + len(rest)
	o.segments = nil
	work, waited = m.finish(rest)
	return bodyLen, work, waited
}

// MaxKeptBody is the largest uncompressed body kept for identity clients.
// A kept body costs about twice its size in heap (the published snapshot
// and the retired spare whose buffer the next render reuses), and more in
// RSS at the default GOGC: at 100k spanmetrics series (hundreds of MB of
// text) that is gigabytes, set off by a single curl or readiness probe
// without gzip and held for ten minutes after it (the exporter's
// identityTTL). Inflating the
// gzip form instead costs an identity client time in proportion to the
// body, so keeping pays only for small bodies.
const MaxKeptBody = 4 << 20

// keepSink passes the streamed body on to the compressor and, while on,
// collects a copy; it turns itself off (and lets the copy go) when the body
// outgrows MaxKeptBody.
type keepSink struct {
	w   io.Writer
	on  bool
	buf []byte
}

func (k *keepSink) Write(p []byte) (int, error) {
	if k.on {
		if len(k.buf)+len(p) > MaxKeptBody {
			k.on, k.buf = false, nil
		} else {
			k.buf = append(k.buf, p...)
		}
	}
	return k.w.Write(p)
}
