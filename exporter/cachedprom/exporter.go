package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"hash/maphash"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// cachedExporter is the component: ConsumeMetrics folds data into the store,
// a renderer goroutine turns the store into a snapshot, and the HTTP handler
// serves the last published snapshot.
type cachedExporter struct {
	cfg       *Config
	settings  component.TelemetrySettings
	logger    *zap.Logger
	store     *seriesStore
	telemetry *telemetry

	snapshot    atomic.Pointer[snapshot]
	dirty       atomic.Bool
	wake        chan struct{} // capacity 1: ingest never blocks on it
	firstRender chan struct{} // closed when the first snapshot is published
	done        chan struct{}

	// Last time a client asked for an uncompressed text / OpenMetrics body,
	// unix nanoseconds.
	textIdentitySeen atomic.Int64
	omIdentitySeen   atomic.Int64

	firstRenderWait time.Duration
	etagPrefix      string

	renderMu sync.Mutex // serialises renders (loop and renderNow)
	renderer snapshotRenderer

	server       *http.Server
	wg           sync.WaitGroup
	startOnce    sync.Once
	shutdownOnce sync.Once
}

func newExporter(cfg *Config, set exporter.Settings) (*cachedExporter, error) {
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	return &cachedExporter{
		cfg:         cfg,
		settings:    set.TelemetrySettings,
		logger:      set.Logger,
		store:       newSeriesStore(cfg, set.Logger),
		telemetry:   tel,
		wake:        make(chan struct{}, 1),
		firstRender: make(chan struct{}),
		done:        make(chan struct{}),
		// Long enough for one render of a large store, short enough that
		// Prometheus' scrape timeout (10s by default) is not reached.
		firstRenderWait: min(max(2*cfg.RenderInterval, time.Second), 5*time.Second),
		// A per-process nonce keeps ETags from an earlier process from
		// matching a different body after a restart.
		etagPrefix: `"` + hex.EncodeToString(nonce[:]) + "-",
	}, nil
}

// ConsumeMetrics updates series state. It contends only with the renderer's
// short copy phase, never with scrapes.
func (e *cachedExporter) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	if e.store.consume(md, time.Now()) {
		e.dirty.Store(true)
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Capabilities says ingest does not modify the data it is given.
func (e *cachedExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (e *cachedExporter) Start(ctx context.Context, host component.Host) error {
	ln, err := e.cfg.ToListener(ctx)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(e.cfg.Path, newHandler(e))
	srv, err := e.cfg.ToServer(ctx, host.GetExtensions(), e.settings, mux)
	if err != nil {
		return errors.Join(err, ln.Close())
	}
	e.server = srv
	e.startOnce.Do(func() {
		e.wg.Add(2)
		go func() {
			defer e.wg.Done()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				e.logger.Error("cachedprom server stopped", zap.Error(err))
			}
		}()
		go func() {
			defer e.wg.Done()
			e.renderLoop()
		}()
	})
	return nil
}

func (e *cachedExporter) Shutdown(ctx context.Context) error {
	var err error
	e.shutdownOnce.Do(func() {
		close(e.done)
		if e.server != nil {
			err = e.server.Shutdown(ctx)
		}
		e.wg.Wait()
		e.telemetry.shutdown()
	})
	return err
}

// renderLoop owns rendering and expiry. It renders when the store changed,
// at most once per render_interval, and after a render idles at least as
// long as that render took (so it uses at most half a core however large the
// store); it sweeps expired series on its own clock so expiry does not
// depend on scrapes.
func (e *cachedExporter) renderLoop() {
	ticker := time.NewTicker(e.cfg.RenderInterval)
	defer ticker.Stop()
	sweepEvery := max(e.cfg.RenderInterval, min(e.cfg.MetricExpiration/10, 30*time.Second))
	start := time.Now()
	nextSweep := start.Add(sweepEvery)
	var nextRender time.Time
	var lastDropLog time.Time
	for {
		select {
		case <-e.done:
			return
		case <-e.wake:
		case <-ticker.C:
		}
		now := time.Now()
		if !now.Before(nextSweep) {
			if n := e.store.expire(now.Add(-e.cfg.MetricExpiration)); n > 0 {
				e.dirty.Store(true)
			}
			nextSweep = now.Add(sweepEvery)
		}
		if now.Sub(lastDropLog) >= e.cfg.RenderInterval {
			lastDropLog = now
			e.logEvents()
		}
		neverRendered := e.snapshot.Load() == nil
		due := e.dirty.Load() || (neverRendered && now.Sub(start) >= e.firstRenderWait)
		if !due || now.Before(nextRender) {
			continue
		}
		began := time.Now()
		took := e.renderNow()
		// Idle at least as long as the render took: at most half a core.
		nextRender = began.Add(max(e.cfg.RenderInterval, 2*took))
	}
}

// renderNow renders and publishes a snapshot of the current store.
func (e *cachedExporter) renderNow() time.Duration {
	e.renderMu.Lock()
	defer e.renderMu.Unlock()
	e.dirty.Store(false) // before the copy: later updates mark it again
	began := time.Now()
	snap := e.renderer.render(e)
	took := time.Since(began)
	prev := e.snapshot.Swap(snap)
	if prev == nil {
		close(e.firstRender)
	}
	e.renderer.retire(prev)
	e.telemetry.recordRender(took, snap, e.store.labelSetCount())
	return took
}

// logEvents records what ingest counted since the last call in own
// telemetry, and logs a warning for points folded into overflow series or
// dropped: at most one line per render_interval, never one per point.
func (e *cachedExporter) logEvents() {
	ev := e.store.takeEvents()
	e.telemetry.recordEvents(ev)
	if n := ev[eventOverflow]; n > 0 {
		e.logger.Warn("max_series reached: data points of new series were added to the overflow series (otel_metric_overflow=\"true\")",
			zap.Int("max_series", e.cfg.MaxSeries),
			zap.Int64("overflow_data_points", n),
			zap.Duration("interval", e.cfg.RenderInterval))
	}
	var dropped []zap.Field
	for _, k := range []pointEvent{eventOutOfOrder, eventRefusedName, eventRefusedType, eventRefusedLabel, eventUnsupported} {
		if ev[k] > 0 {
			dropped = append(dropped, zap.Int64(eventNames[k], ev[k]))
		}
	}
	if len(dropped) > 0 {
		e.logger.Warn("data points dropped (see otelcol_exporter_cachedprom_dropped_points)", dropped...)
	}
}

// snapshotRenderer keeps the renderer's reusable state between renders.
type snapshotRenderer struct {
	store   *seriesStore
	rd      renderer
	zw      *gzip.Writer
	retired []*snapshot // unpublished snapshots whose buffers may be reused
	chunk   []byte      // chunk buffer of streamed renders
	keep    keepSink    // collects the body being streamed for identity clients
	lastLen int         // uncompressed length of the last body
}

func (r *snapshotRenderer) render(e *cachedExporter) *snapshot {
	r.rd.withTimestamps = e.cfg.SendTimestamps
	r.store = e.store
	if r.zw == nil {
		r.zw, _ = gzip.NewWriterLevel(nil, gzipLevel)
	}
	snap := &snapshot{}
	// Reuse the buffers of a retired snapshot no scrape is reading: bodies
	// are large, and allocating (and zeroing) them per render would make
	// memory and GC work grow with every render.
	old := r.reusable()
	now := time.Now().UnixNano()
	keepText := now-e.textIdentitySeen.Load() < int64(identityTTL)
	snap.text, snap.textGzip, snap.textKept, snap.textLen = r.body(old.text, old.textGzip, keepText, r.rd.renderText)
	if e.cfg.EnableOpenMetrics {
		keepOM := now-e.omIdentitySeen.Load() < int64(identityTTL)
		snap.om, snap.omGzip, snap.omKept, snap.omLen = r.body(old.om, old.omGzip, keepOM, r.rd.renderOpenMetrics)
	}
	snap.series, snap.hidden = r.rd.series, r.rd.hidden
	// The ETag is derived from the content (gzip output is deterministic),
	// so a render of unchanged data keeps it and conditional requests still
	// match. Hashing the compressed form is cheap: ~3% of the body.
	var h maphash.Hash
	h.SetSeed(etagSeed)
	_, _ = h.Write(snap.textGzip)
	_, _ = h.Write(snap.omGzip)
	snap.etag = e.etagPrefix + strconv.FormatUint(h.Sum64(), 36) + "-"
	return snap
}

// etagSeed is fixed for the process so equal content hashes equally.
var etagSeed = maphash.MakeSeed()

// identityTTL is how long the uncompressed body is kept after the last
// client that asked for it. Prometheus always asks for gzip, so normally
// only the compressed form (about 3% of the size) is held.
const identityTTL = 10 * time.Minute

// maxKeptBody is the largest uncompressed body kept for identity clients.
// A kept body costs about twice its size in heap (the published snapshot
// and the retired spare whose buffer the next render reuses), and more in
// RSS at the default GOGC: at 100k spanmetrics series (575 MB of text)
// that is gigabytes, set off by a single curl or readiness probe without
// gzip and held for identityTTL. Inflating the gzip form instead costs an
// identity client about 1 ms per MB here (those 575 MB in half a second),
// so keeping pays only for small bodies. Tests lower it.
var maxKeptBody = 4 << 20

// body streams one format into the compressor in chunks and keeps the chunk
// buffer for next time. With keep it also collects the body for identity
// clients, if the last body fitted in maxKeptBody and as long as this one
// does: collecting from the stream (instead of rendering the whole body,
// then compressing it) means a store that grew past the limit never holds a
// body it will not keep.
func (r *snapshotRenderer) body(textBuf, gzBuf []byte, keep bool, render func([]byte, *seriesStore) []byte) (body, gz []byte, kept bool, length int) {
	r.keep = keepSink{}
	if keep && r.lastLen <= maxKeptBody {
		if cap(textBuf) < r.lastLen {
			// Size for the last body plus growth room instead of letting
			// append double its way up (and leave the halves as garbage).
			textBuf = make([]byte, 0, min(r.lastLen+r.lastLen/8, maxKeptBody))
		}
		r.keep = keepSink{on: true, buf: textBuf[:0]}
	}
	gz, r.chunk, length = r.rd.renderCompressed(gzBuf, r.chunk, r.zw, &r.keep, func(dst []byte) []byte { return render(dst, r.store) })
	r.lastLen = length
	body, kept = r.keep.buf, r.keep.on
	r.keep = keepSink{}
	if !kept {
		body = nil
	}
	return body, gz, kept, length
}

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

// retire records a snapshot that is no longer published. One spare is
// kept: holding more would multiply memory for large bodies, and a scrape
// slower than a render interval only costs a fresh allocation.
func (r *snapshotRenderer) retire(s *snapshot) {
	if s == nil {
		return
	}
	if len(r.retired) >= 1 {
		r.retired = r.retired[1:]
	}
	r.retired = append(r.retired, s)
}
