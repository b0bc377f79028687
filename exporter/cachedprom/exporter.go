package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// cachedExporter is the component: ConsumeMetrics folds data into the store
// (internal/store), a renderer goroutine turns the store into a snapshot
// (internal/render), and the HTTP handler (server.go) serves the last
// published snapshot.
type cachedExporter struct {
	cfg       *Config
	gates     followedGates // read once, when the exporter is built
	settings  component.TelemetrySettings
	logger    *zap.Logger
	store     *store.Store
	telemetry *telemetry

	snapshot atomic.Pointer[render.Snapshot]
	dirty    atomic.Bool
	// lastChange is when ingest last changed the store and dirtySince when
	// the oldest change no snapshot shows yet came (unix nanoseconds of
	// the clock): the render loop waits for ingest to pause (renderSettle)
	// but not past renderMaxDelay.
	lastChange  atomic.Int64
	dirtySince  atomic.Int64
	wake        chan struct{} // capacity 1: ingest never blocks on it
	firstRender chan struct{} // closed when the first snapshot is published
	done        chan struct{}

	// Last time a client asked for an uncompressed text / OpenMetrics body,
	// unix nanoseconds.
	textIdentitySeen atomic.Int64
	omIdentitySeen   atomic.Int64
	// Last time a client asked for the protobuf exposition, and for it
	// uncompressed: the protobuf body is rendered only while such clients
	// are around (protoTTL), so others pay nothing for it.
	protoSeen         atomic.Int64
	protoIdentitySeen atomic.Int64

	firstRenderWait time.Duration
	renderSettle    time.Duration
	renderMaxDelay  time.Duration
	// spareWaitMin is the published gzip body from which a due render
	// waits for a spare no scrape reads (holdForSpare).
	spareWaitMin int

	// clock is the time of ingest, of the render loop and of identity
	// scrapes: real in the collector, fake in tests.
	clock clockwork.Clock

	renderMu sync.Mutex // serialises renders (loop and renderNow)
	renderer *render.Snapshots

	server       *http.Server
	wg           sync.WaitGroup
	startOnce    sync.Once
	shutdownOnce sync.Once
}

func newExporter(cfg *Config, set exporter.Settings, clock clockwork.Clock) (*cachedExporter, error) {
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	g := readGates()
	return &cachedExporter{
		cfg:       cfg,
		gates:     g,
		settings:  set.TelemetrySettings,
		logger:    set.Logger,
		store:     newStore(cfg, g, set.Logger),
		telemetry: tel,
		renderer: render.NewSnapshots(render.Options{
			WithTimestamps:  cfg.SendTimestamps,
			ClassicFallback: cfg.NativeHistograms.ClassicFallback,
		}, `"`+hex.EncodeToString(nonce[:])+"-"),
		wake:        make(chan struct{}, 1),
		firstRender: make(chan struct{}),
		clock:       clock,
		done:        make(chan struct{}),
		// Long enough for one render of a large store, short enough that
		// Prometheus' scrape timeout (10s by default) is not reached.
		firstRenderWait: min(max(2*cfg.RenderInterval, time.Second), 5*time.Second),
		// A flush upstream arrives as many ConsumeMetrics calls in a row
		// (tracemetrics sends it in chunks). Rendering at the first of them
		// would render the whole store again for each part of the flush
		// that comes during the render and its pause; waiting until calls
		// stop for a fraction of the interval renders a flush once, and
		// whole. Input that never pauses is still rendered, a few intervals
		// late at most.
		renderSettle:   cfg.RenderInterval / 4,
		renderMaxDelay: 4 * cfg.RenderInterval,
		spareWaitMin:   spareWaitMinBytes,
	}, nil
}

// newNamer returns the namer of cfg, under the gates g.
func newNamer(cfg *Config, g followedGates) *naming.Namer {
	withSuffixes, utf8Allowed := cfg.translation(g.ignoreAddMetricSuffixes)
	return naming.New(naming.Options{WithSuffixes: withSuffixes, UTF8Allowed: utf8Allowed, Namespace: cfg.Namespace})
}

// newStore returns the store of cfg, under the gates g.
func newStore(cfg *Config, g followedGates, logger *zap.Logger) *store.Store {
	return store.New(store.Options{
		Names:                        newNamer(cfg, g),
		ConstLabels:                  cfg.ConstLabels,
		MaxSeries:                    cfg.MaxSeries,
		WithoutScopeInfo:             cfg.WithoutScopeInfo,
		Exemplars:                    cfg.EnableOpenMetrics,
		KeepIdentifyingResourceAttrs: g.keepIdentifyingResourceAttrs,
		Logger:                       logger,
	})
}

// ConsumeMetrics updates series state. It contends only with the renderer's
// short copy phase, never with scrapes.
func (e *cachedExporter) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	now := e.clock.Now()
	if e.store.Consume(md, now) {
		e.lastChange.Store(now.UnixNano())
		e.markDirty(now)
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// markDirty notes that the store changed at now; the first change after a
// render starts the render's maximum delay.
func (e *cachedExporter) markDirty(now time.Time) {
	if !e.dirty.Swap(true) {
		e.dirtySince.Store(now.UnixNano())
	}
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
		// The render loop has stopped and the server is closed: nothing
		// reads the store any more.
		e.store.Close()
		// Nor the snapshots, which live outside the Go heap.
		e.renderMu.Lock()
		e.renderer.FreeAll(e.snapshot.Swap(nil))
		e.renderMu.Unlock()
	})
	return err
}

// renderLoop owns rendering and expiry. It renders when the store changed
// and ingest paused, at most once per render_interval, and after a render
// idles at least as long as that render's processor time (so it uses at
// most half a core on average however large the store, also when a large
// body was compressed on several cores); it sweeps expired series on its
// own clock so expiry does not depend on scrapes.
func (e *cachedExporter) renderLoop() {
	ticker := e.clock.NewTicker(e.cfg.RenderInterval)
	defer ticker.Stop()
	// settle wakes the loop when ingest has paused long enough, rather
	// than at the next tick.
	settle := e.clock.NewTimer(e.cfg.RenderInterval)
	defer settle.Stop()
	st := e.newSchedule(e.clock.Now())
	for {
		select {
		case <-e.done:
			return
		case <-e.wake:
		case <-ticker.Chan():
		case <-settle.Chan():
		}
		if wait := e.step(e.clock.Now(), st); wait > 0 {
			settle.Reset(wait)
		}
	}
}

// schedule is the render loop's timing state.
type schedule struct {
	start, nextSweep, nextRender, lastLog time.Time
	sweepEvery                            time.Duration
	unlogged                              store.Events // counted, not yet logged
	// lastWork is the last render's processor time, and spareWaitSince
	// when a due render began to wait for a spare (zero when none waits).
	lastWork       time.Duration
	spareWaitSince time.Time
}

func (e *cachedExporter) newSchedule(now time.Time) *schedule {
	every := max(e.cfg.RenderInterval, min(e.cfg.MetricExpiration/10, 30*time.Second))
	return &schedule{start: now, nextSweep: now.Add(every), sweepEvery: every}
}

// step is one wake-up of the render loop at now: sweep when due, record
// own telemetry at most once per interval, render when something changed,
// ingest paused (or the change waited renderMaxDelay) and the last render's
// pause is over. It returns how long until ingest will have paused long
// enough, or until it looks again for a spare a due render waits for
// (holdForSpare), else 0. It takes the time as an argument so tests drive
// it with their own clock instead of sleeping.
func (e *cachedExporter) step(now time.Time, st *schedule) (settleIn time.Duration) {
	// A spare still read when its render retired it is given back now.
	e.renderMu.Lock()
	e.renderer.DiscardSpares()
	e.renderMu.Unlock()
	if !now.Before(st.nextSweep) {
		if n := e.store.Expire(now.Add(-e.cfg.MetricExpiration)); n > 0 {
			e.markDirty(now)
		}
		st.nextSweep = now.Add(st.sweepEvery)
	}
	if now.Sub(st.lastLog) >= e.cfg.RenderInterval {
		st.lastLog = now
		e.countEvents(st)
		e.logEvents(st)
	}
	neverRendered := e.snapshot.Load() == nil
	due := neverRendered && now.Sub(st.start) >= e.firstRenderWait
	if e.dirty.Load() {
		quiet := now.Sub(time.Unix(0, e.lastChange.Load()))
		overdue := now.Sub(time.Unix(0, e.dirtySince.Load())) >= e.renderMaxDelay
		switch {
		case quiet >= e.renderSettle || overdue:
			due = true
		case !due && !now.Before(st.nextRender):
			settleIn = e.renderSettle - quiet
		}
	}
	if !due || now.Before(st.nextRender) {
		// A wait for a spare ends with the render it held back (ingest
		// resumed): the next due render waits its whole bound again rather
		// than from a start that no longer applies.
		st.spareWaitSince = time.Time{}
		return settleIn
	}
	if wait := e.holdForSpare(now, st); wait > 0 {
		return wait
	}
	// Counted before the render: a snapshot showing an overflow series
	// never comes before the telemetry counting what went into it.
	e.countEvents(st)
	work := e.renderNow()
	// Idle at least as long as the render's processor time: at most half
	// a core on average, also when a large body was compressed on several.
	st.nextRender = now.Add(max(e.cfg.RenderInterval, 2*work))
	st.lastWork = work
	return 0
}

// holdForSpare returns how long a due render waits before it looks again
// for a spare, or 0 to render now. While a render writes its body, the
// published one is still served, so two bodies are resident; a render that
// finds the spare still written to a client (a scrape that began before the
// last render was published) takes a fresh mapping, and a third body is
// resident while that scrape lasts: about 130 MB at a million series, where
// a scrape reads for seconds (Prometheus inflates the whole page before it
// parses it). So a render of a large body waits for the spare's last
// reader, at most as long as the last render took (at least
// render_interval): the data a scrape sees is then at most one render
// older, and memory holds two bodies unless a scrape outlasts that too.
// Small bodies never wait: a fresh mapping costs less than the delay.
func (e *cachedExporter) holdForSpare(now time.Time, st *schedule) time.Duration {
	pub := e.snapshot.Load()
	e.renderMu.Lock()
	busy := pub != nil && pub.Size() >= e.spareWaitMin && e.renderer.SparesRead()
	e.renderMu.Unlock()
	if !busy {
		if !st.spareWaitSince.IsZero() {
			e.telemetry.spareWaits[spareReused].Add(1)
			st.spareWaitSince = time.Time{}
		}
		return 0
	}
	if st.spareWaitSince.IsZero() {
		st.spareWaitSince = now
	}
	left := max(e.cfg.RenderInterval, st.lastWork) - now.Sub(st.spareWaitSince)
	if left <= 0 {
		e.telemetry.spareWaits[spareFresh].Add(1)
		st.spareWaitSince = time.Time{}
		return 0
	}
	return min(left, sparePoll)
}

const (
	// spareWaitMinBytes is the published gzip body from which a render
	// waits for its spare: ~60k RED series.
	spareWaitMinBytes = 8 << 20
	// sparePoll is how often a waiting render looks for the spare again: a
	// scrape's end wakes nothing.
	sparePoll = 50 * time.Millisecond
)

// renderNow renders and publishes a snapshot of the current store. It
// returns the render's processor time: its duration, or more when workers
// compressed the body on other cores meanwhile.
func (e *cachedExporter) renderNow() time.Duration {
	e.renderMu.Lock()
	defer e.renderMu.Unlock()
	e.dirty.Store(false) // before the copy: later updates mark it again
	began := time.Now()
	snap := e.renderer.Render(e.store, e.wants(e.clock.Now().UnixNano()))
	took := time.Since(began)
	prev := e.snapshot.Swap(snap)
	if prev == nil {
		close(e.firstRender)
	}
	e.renderer.Retire(prev)
	e.telemetry.recordRender(took, snap, e.store.Sizes().LabelSets)
	return max(took, took-e.renderer.Waited()+e.renderer.Work())
}

// wants says what a render at now makes besides the text body's gzip form:
// the OpenMetrics body when enabled, the protobuf body while clients ask
// for it, the uncompressed bodies while clients without gzip do.
func (e *cachedExporter) wants(now int64) render.Wants {
	return render.Wants{
		OpenMetrics:     e.cfg.EnableOpenMetrics,
		Proto:           now-e.protoSeen.Load() < int64(protoTTL),
		KeepText:        now-e.textIdentitySeen.Load() < int64(identityTTL),
		KeepOpenMetrics: now-e.omIdentitySeen.Load() < int64(identityTTL),
		KeepProto:       now-e.protoIdentitySeen.Load() < int64(identityTTL),
	}
}

// protoTTL is how long the protobuf body is rendered after the last client
// that asked for it. Prometheus asks for it only with native histograms
// enabled (2.42 and later, and 3.x); other clients never pay its render.
const protoTTL = 10 * time.Minute

// identityTTL is how long the uncompressed body is kept after the last
// client that asked for it. Prometheus always asks for gzip, so normally
// only the compressed form (a small fraction of the size) is held.
const identityTTL = 10 * time.Minute

// acquire returns the published snapshot with a reader registered, or nil.
// The pointer is re-checked after registering: a snapshot retired in
// between may already be being overwritten, so it is released and the new
// one tried. A retired snapshot can never be acquired again.
func (e *cachedExporter) acquire() *render.Snapshot {
	for {
		s := e.snapshot.Load()
		if s == nil {
			return nil
		}
		s.Hold()
		if e.snapshot.Load() == s {
			return s
		}
		s.Release()
	}
}

// identitySeen records that a client wanted the uncompressed body, so the
// renderer keeps it; when it was not kept, a render is requested so the next
// such scrape is a plain write.
func (e *cachedExporter) identitySeen(which render.Body, kept bool) {
	seen := &e.textIdentitySeen
	switch which {
	case render.BodyOpenMetrics:
		seen = &e.omIdentitySeen
	case render.BodyProto:
		seen = &e.protoIdentitySeen
	}
	seen.Store(e.clock.Now().UnixNano())
	if !kept {
		e.requestRender()
	}
}

// wantProto records that a client asked for the protobuf exposition, so the
// renderer renders it for protoTTL, and reports whether snap has it. When it
// does not, a render is requested: the client gets text this time. identity
// also records the wish for the uncompressed body, which the next render
// then keeps.
func (e *cachedExporter) wantProto(identity bool, snap *render.Snapshot) bool {
	now := e.clock.Now().UnixNano()
	e.protoSeen.Store(now)
	if snap != nil && snap.Body(render.BodyProto).Gzip != nil {
		return true
	}
	if identity {
		e.protoIdentitySeen.Store(now)
	}
	e.requestRender()
	return false
}

// requestRender marks the store dirty and wakes the render loop.
func (e *cachedExporter) requestRender() {
	e.dirty.Store(true)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// waitFirstRender blocks a scrape that arrives before any snapshot until the
// first render is published, at most firstRenderWait or until the client
// gives up.
func (e *cachedExporter) waitFirstRender(r *http.Request) {
	t := time.NewTimer(e.firstRenderWait)
	defer t.Stop()
	select {
	case <-e.firstRender:
	case <-t.C:
	case <-r.Context().Done():
	case <-e.done:
	}
}

// countEvents records what ingest counted since the last call in own
// telemetry, and keeps it for the next log line.
func (e *cachedExporter) countEvents(st *schedule) {
	ev := e.store.TakeEvents()
	e.telemetry.recordEvents(ev)
	for k, n := range ev {
		st.unlogged[k] += n
	}
}

// logEvents logs a warning for points counted since the last line that were
// folded into overflow series or dropped: at most one line per
// render_interval, never one per point.
func (e *cachedExporter) logEvents(st *schedule) {
	ev := st.unlogged
	st.unlogged = store.Events{}
	if n := ev[store.EventOverflow]; n > 0 {
		e.logger.Warn("max_series reached: data points of new series were added to the overflow series (otel_metric_overflow=\"true\")",
			zap.Int("max_series", e.cfg.MaxSeries),
			zap.Int64("overflow_data_points", n),
			zap.Duration("interval", e.cfg.RenderInterval))
	}
	var dropped []zap.Field
	for k := range store.NumEvents {
		if k.Dropped() && ev[k] > 0 {
			dropped = append(dropped, zap.Int64(k.String(), ev[k]))
		}
	}
	if len(dropped) > 0 {
		e.logger.Warn("data points dropped (see otelcol_exporter_cachedprom_dropped_points)", dropped...)
	}
}
