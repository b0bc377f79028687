package hotspotfilter // import "github.com/otelcol-red/otelcol-red/connector/hotspotfilter"

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// unknownService stands for spans whose resource has no service.name, as the
// OpenTelemetry SDKs name such services.
const unknownService = "unknown_service"

// filter holds the rules and the per-service state of one configured
// hotspotfilter. The collector creates one connector per output signal; both
// share the filter of their component ID, so the metrics describe the very
// decisions the traces output carries out.
type filter struct {
	id        component.ID
	logger    *zap.Logger
	rules     []*rule
	unmatched *serviceTable // counts the spans no rule selects, per service
	expiry    time.Duration
	interval  time.Duration

	// clock is the factory's: real in the collector, fake in tests. epoch
	// anchors the nanosecond timestamps of the budgets.
	clock clockwork.Clock
	epoch time.Time

	// Set while the collector builds the pipelines, read after Start.
	tracesNext  consumer.Traces
	metricsNext consumer.Metrics

	scratch sync.Pool

	lifecycle sync.Mutex
	refs      int  // connectors created on this filter and not shut down
	running   bool // the flush loop runs
	stopped   bool // the flush loop ran and was stopped: never restart it
	stop      chan struct{}
	done      chan struct{}
}

func newFilter(set connector.Settings, cfg *Config, clock clockwork.Clock) (*filter, error) {
	f := &filter{
		id:       set.ID,
		logger:   set.Logger,
		expiry:   cfg.ServiceExpiry,
		interval: cfg.MetricsFlushInterval,
		clock:    clock,
		epoch:    clock.Now(),
	}
	unixStart := f.epoch.UnixNano()
	for i := range cfg.Rules {
		r, err := newRule(&cfg.Rules[i], cfg.MaxServices, unixStart, set.TelemetrySettings)
		if err != nil {
			return nil, err
		}
		f.rules = append(f.rules, r)
	}
	f.unmatched = newServiceTable(cfg.MaxServices, unixStart)
	n := len(f.rules)
	f.scratch.New = func() any {
		return &scratch{
			parents:  make(map[pcommon.SpanID]struct{}),
			admitted: make([]bool, n),
			entries:  make([]*serviceEntry, n+1),
			counts:   make([][numOutcomes]int64, n+1),
			over:     make([]bool, n),
		}
	}
	return f, nil
}

// scratch is the per-call working memory of consume, pooled so that a batch
// costs no allocation beyond its output.
type scratch struct {
	matches  []int32                     // rule index per span in batch order, -1 for none
	parents  map[pcommon.SpanID]struct{} // span IDs that are a parent within the batch
	admitted []bool                      // per rule: applies to the current resource's service
	entries  []*serviceEntry             // per rule, then unmatched: the current service's entry
	counts   [][numOutcomes]int64        // per rule, then unmatched: outcomes for the current resource
	over     []bool                      // per rule: the current service went over budget
}

// consume decides every span of td and returns a new Traces holding the kept
// ones; td is only read.
func (f *filter) consume(ctx context.Context, td ptrace.Traces) ptrace.Traces {
	nowTime := f.clock.Now()
	now, unixNow := int64(nowTime.Sub(f.epoch)), nowTime.UnixNano()
	sc := f.scratch.Get().(*scratch)
	defer f.putScratch(sc)

	// Pass 1: which rule selects each span. Parents are only needed when a
	// budget may apply, so batches without selected spans skip that map.
	sc.matches = sc.matches[:0]
	selected := 0
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		service := serviceName(rs.Resource())
		for r, ru := range f.rules {
			sc.admitted[r] = ru.admits(service)
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				m := int32(-1)
				for r, ru := range f.rules {
					if sc.admitted[r] && ru.matches(ctx, rs, ss, span) {
						m = int32(r)
						break
					}
				}
				if m >= 0 {
					selected++
				}
				sc.matches = append(sc.matches, m)
			}
		}
	}
	clear(sc.parents)
	if selected > 0 {
		collectParents(td, sc.parents)
	}

	// Pass 2: decide and copy the kept spans into new data.
	out := ptrace.NewTraces()
	unmatchedSlot := len(f.rules)
	n := 0
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		service := serviceName(rs.Resource())
		clear(sc.entries)
		clear(sc.counts)
		clear(sc.over)
		var outRS ptrace.ResourceSpans
		hasRS := false
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			var outSS ptrace.ScopeSpans
			hasSS := false
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				m := sc.matches[n]
				n++
				var o outcome
				if m < 0 {
					o = keptUnmatched
					sc.counts[unmatchedSlot][o]++
				} else {
					o = f.decide(span, int(m), service, sc, now, unixNow)
					sc.counts[m][o]++
				}
				if o == dropped {
					continue
				}
				if !hasRS {
					outRS = out.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(outRS.Resource())
					outRS.SetSchemaUrl(rs.SchemaUrl())
					hasRS = true
				}
				if !hasSS {
					outSS = outRS.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(outSS.Scope())
					outSS.SetSchemaUrl(ss.SchemaUrl())
					hasSS = true
				}
				span.CopyTo(outSS.Spans().AppendEmpty())
			}
		}
		f.record(service, sc, now, unixNow)
	}
	return out
}

// maxPooledParents bounds the parent set a pooled scratch keeps: clear does
// not shrink a map, so one huge batch would otherwise pin its memory.
const maxPooledParents = 1 << 16

func (f *filter) putScratch(sc *scratch) {
	if len(sc.parents) > maxPooledParents {
		sc.parents = make(map[pcommon.SpanID]struct{})
	}
	f.scratch.Put(sc)
}

// decide judges one span that rule m selected. Exemptions come first, so a
// kept error or slow span never spends budget.
func (f *filter) decide(span ptrace.Span, m int, service string, sc *scratch, now, unixNow int64) outcome {
	ru := f.rules[m]
	if ru.keepErrors && span.Status().Code() == ptrace.StatusCodeError {
		return keptError
	}
	// A span ending before it starts has no duration to trust: it is judged
	// as fast, never exempted as slow.
	if start, end := span.StartTimestamp(), span.EndTimestamp(); ru.slow > 0 && end > start && uint64(end-start) >= ru.slow {
		return keptSlow
	}
	if _, ok := sc.parents[span.SpanID()]; ok {
		return keptParent
	}
	e := sc.entries[m]
	if e == nil {
		e = ru.services.get(service, now, unixNow)
		sc.entries[m] = e
	}
	if e.take(now, ru.interval, ru.tolerance) {
		return keptBudget
	}
	sc.over[m] = true
	if ru.sampleExcess > 0 && e.excess.Add(1)%ru.sampleExcess == 0 {
		return keptSampled
	}
	return dropped
}

// record adds one resource's outcomes to its entries: one atomic add per
// outcome and entry instead of one per span keeps hot entries' cache lines
// quiet when many producers feed the same service.
func (f *filter) record(service string, sc *scratch, now, unixNow int64) {
	for slot := range sc.counts {
		counts := &sc.counts[slot]
		var nonzero int64
		for _, c := range counts {
			nonzero |= c
		}
		if nonzero == 0 {
			continue
		}
		e := sc.entries[slot]
		if e == nil {
			table := f.unmatched
			if slot < len(f.rules) {
				table = f.rules[slot].services
			}
			e = table.get(service, now, unixNow)
		}
		for o, c := range counts {
			if c != 0 {
				e.counts[o].Add(c)
			}
		}
		if slot < len(f.rules) && sc.over[slot] {
			e.hot.Store(true)
		}
	}
}

// collectParents adds the parent span ID of every span in td to parents.
func collectParents(td ptrace.Traces, parents map[pcommon.SpanID]struct{}) {
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		sss := rss.At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				if p := spans.At(k).ParentSpanID(); !p.IsEmpty() {
					parents[p] = struct{}{}
				}
			}
		}
	}
}

func serviceName(res pcommon.Resource) string {
	v, ok := res.Attributes().Get("service.name")
	if !ok {
		return unknownService
	}
	var s string
	if v.Type() == pcommon.ValueTypeStr {
		s = v.Str()
	} else {
		s = v.AsString()
	}
	if s == "" {
		return unknownService
	}
	return s
}

func (f *filter) setTracesNext(next consumer.Traces) {
	f.lifecycle.Lock()
	f.tracesNext = next
	f.lifecycle.Unlock()
}

func (f *filter) setMetricsNext(next consumer.Metrics) {
	f.lifecycle.Lock()
	f.metricsNext = next
	f.lifecycle.Unlock()
}

// start begins the flush loop on the first Start of either connector. All
// connectors exist by then: the collector creates every component before it
// starts any. The loop also runs without a metrics output, since it is what
// forgets idle services.
func (f *filter) start() {
	f.lifecycle.Lock()
	defer f.lifecycle.Unlock()
	if f.running || f.stopped {
		return
	}
	f.running = true
	f.stop = make(chan struct{})
	f.done = make(chan struct{})
	go f.flushLoop(f.stop, f.done)
}

func (f *filter) flushLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	// The loop ticks in real time, not on the injected clock: tests that
	// move the clock call flush themselves, at the points they check.
	ticker := time.NewTicker(f.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			if err := f.flush(context.Background()); err != nil {
				f.logger.Warn("cannot emit hotspotfilter metrics", zap.Error(err))
			}
		case <-stop:
			return
		}
	}
}

// stopLoop ends the flush loop once; with final set it then emits the last
// counts. The metrics connector's Shutdown does so without waiting for the
// traces connector: the collector shuts components down upstream first, so
// the metrics exporter may be gone by the time the traces connector stops,
// while everything upstream of both connectors (hence all data) has already
// stopped.
func (f *filter) stopLoop(ctx context.Context, final bool) error {
	f.lifecycle.Lock()
	running := f.running
	f.running, f.stopped = false, true
	f.lifecycle.Unlock()
	if running {
		close(f.stop)
		<-f.done
	}
	if !final || !running {
		return nil
	}
	return f.flush(ctx)
}

// release is called by each connector's Shutdown; the last one stops the
// loop if it still runs and forgets the filter, so that a rebuilt pipeline
// starts from fresh state.
func (f *filter) release(ctx context.Context) error {
	f.lifecycle.Lock()
	f.refs--
	last := f.refs == 0
	f.lifecycle.Unlock()
	if !last {
		return nil
	}
	filters.forget(f.id, f)
	return f.stopLoop(ctx, false)
}

// registry shares one filter among the connectors of one component ID.
type registry struct {
	mu sync.Mutex
	m  map[component.ID]*filter
}

var filters = &registry{m: make(map[component.ID]*filter)}

func (r *registry) acquire(set connector.Settings, cfg *Config, clock clockwork.Clock) (*filter, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.m[set.ID]
	if f == nil {
		var err error
		if f, err = newFilter(set, cfg, clock); err != nil {
			return nil, err
		}
		r.m[set.ID] = f
	}
	f.lifecycle.Lock()
	f.refs++
	f.lifecycle.Unlock()
	return f, nil
}

func (r *registry) forget(id component.ID, f *filter) {
	r.mu.Lock()
	if r.m[id] == f {
		delete(r.m, id)
	}
	r.mu.Unlock()
}

// tracesConnector is the traces → traces connector: it makes the decisions
// and passes the kept spans on.
type tracesConnector struct {
	filter   *filter
	shutdown sync.Once
}

func (c *tracesConnector) Start(context.Context, component.Host) error {
	c.filter.start()
	return nil
}

func (c *tracesConnector) Shutdown(ctx context.Context) error {
	var err error
	c.shutdown.Do(func() { err = c.filter.release(ctx) })
	return err
}

// Capabilities: the kept spans are copied into new data and the input is only
// read, so a fan-out shared with other consumers needs no clone.
func (*tracesConnector) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (c *tracesConnector) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	td, err := materialize(td)
	if err != nil {
		return err
	}
	out := c.filter.consume(ctx, td)
	if out.ResourceSpans().Len() == 0 {
		return nil
	}
	return c.filter.tracesNext.ConsumeTraces(ctx, out)
}

// metricsConnector is the traces → metrics connector. When the traces
// output exists it already makes the decisions for the same input, so this
// one only emits; alone it decides for accounting and discards the spans.
type metricsConnector struct {
	filter   *filter
	shutdown sync.Once
}

func (c *metricsConnector) Start(context.Context, component.Host) error {
	c.filter.start()
	return nil
}

func (c *metricsConnector) Shutdown(ctx context.Context) error {
	var err error
	c.shutdown.Do(func() {
		err = errors.Join(c.filter.stopLoop(ctx, true), c.filter.release(ctx))
	})
	return err
}

func (*metricsConnector) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (c *metricsConnector) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if c.filter.tracesNext != nil {
		return nil
	}
	td, err := materialize(td)
	if err != nil {
		return err
	}
	c.filter.consume(ctx, td)
	return nil
}

// materialize turns wire traces (from the otlpwire receiver or the otlpwire_encoding
// extension: the raw request, no spans) into the pdata a stock receiver would have sent, so
// that both outputs are what they are with pdata input; other traces pass as they are, with
// no copy. A carried request pdata refuses is a permanent error: retrying cannot mend it.
func materialize(td ptrace.Traces) (ptrace.Traces, error) {
	td, err := wiretraces.Materialize(td)
	if err != nil {
		return ptrace.Traces{}, consumererror.NewPermanent(err)
	}
	return td, nil
}
