package hotspotfilter

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
)

// newFakeClock is the clock tests give the factory: they move time, nothing sleeps.
func newFakeClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.Unix(1_700_000_000, 0))
}

// testSpan describes one span of a test batch.
type testSpan struct {
	service  string // "" leaves service.name out
	dbSystem string // "" leaves db.system out
	kind     ptrace.SpanKind
	status   ptrace.StatusCode
	dur      time.Duration // negative: end before start
	id       uint64
	parent   uint64
}

func redis(service string, id uint64) testSpan {
	return testSpan{service: service, dbSystem: "redis", kind: ptrace.SpanKindClient, dur: 100 * time.Microsecond, id: id}
}

func spanID(n uint64) pcommon.SpanID {
	var id pcommon.SpanID
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

// makeTraces builds a batch with one ResourceSpans per run of consecutive
// spans of the same service, like an SDK batch from several services.
func makeTraces(spans ...testSpan) ptrace.Traces {
	td := ptrace.NewTraces()
	var ss ptrace.ScopeSpans
	prev := "\x00"
	start := time.Unix(1_700_000_000, 0)
	for _, s := range spans {
		if s.service != prev {
			rs := td.ResourceSpans().AppendEmpty()
			if s.service != "" {
				rs.Resource().Attributes().PutStr("service.name", s.service)
			}
			ss = rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("test")
			prev = s.service
		}
		sp := ss.Spans().AppendEmpty()
		sp.SetName("GET")
		sp.SetKind(s.kind)
		sp.SetTraceID(pcommon.TraceID{1})
		sp.SetSpanID(spanID(s.id))
		if s.parent != 0 {
			sp.SetParentSpanID(spanID(s.parent))
		}
		if s.dbSystem != "" {
			sp.Attributes().PutStr("db.system", s.dbSystem)
		}
		sp.Status().SetCode(s.status)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(s.dur)))
	}
	return td
}

// harness is one configured hotspotfilter with both outputs on sinks.
type harness struct {
	clock   *clockwork.FakeClock
	traces  connector.Traces
	metrics connector.Traces
	kept    *consumertest.TracesSink
	emitted *consumertest.MetricsSink
	filter  *filter
}

func newHarness(t *testing.T, cfg *Config) *harness {
	t.Helper()
	require.NoError(t, cfg.Validate())
	h := &harness{clock: newFakeClock(), kept: new(consumertest.TracesSink), emitted: new(consumertest.MetricsSink)}
	set := connectortest.NewNopSettings(metadata.Type)
	set.ID = component.NewIDWithName(metadata.Type, t.Name())
	f := newFactory(h.clock)
	var err error
	h.traces, err = f.CreateTracesToTraces(context.Background(), set, cfg, h.kept)
	require.NoError(t, err)
	h.metrics, err = f.CreateTracesToMetrics(context.Background(), set, cfg, h.emitted)
	require.NoError(t, err)
	h.filter = h.traces.(*tracesConnector).filter
	require.NoError(t, h.traces.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, h.metrics.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() {
		require.NoError(t, h.traces.Shutdown(context.Background()))
		require.NoError(t, h.metrics.Shutdown(context.Background()))
	})
	return h
}

// consume feeds td to both connectors, as the collector's fan-out does.
func (h *harness) consume(t *testing.T, td ptrace.Traces) {
	t.Helper()
	require.NoError(t, h.traces.ConsumeTraces(context.Background(), td))
	require.NoError(t, h.metrics.ConsumeTraces(context.Background(), td))
}

// keptIDs returns the span IDs the traces output received, in order.
func (h *harness) keptIDs() []uint64 {
	var ids []uint64
	for _, td := range h.kept.AllTraces() {
		rss := td.ResourceSpans()
		for i := 0; i < rss.Len(); i++ {
			sss := rss.At(i).ScopeSpans()
			for j := 0; j < sss.Len(); j++ {
				spans := sss.At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					id := spans.At(k).SpanID()
					ids = append(ids, binary.BigEndian.Uint64(id[:]))
				}
			}
		}
	}
	return ids
}

// point is one data point of the metrics output, flattened for assertions.
type point struct {
	metric, service, rule, reason string
	overflow                      bool
	value                         int64
}

// flushPoints flushes and returns the points of the last emitted metrics.
func (h *harness) flushPoints(t *testing.T) []point {
	t.Helper()
	require.NoError(t, h.filter.flush(context.Background()))
	all := h.emitted.AllMetrics()
	require.NotEmpty(t, all)
	return points(all[len(all)-1])
}

func points(md pmetric.Metrics) []point {
	var out []point
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				}
				for d := 0; d < dps.Len(); d++ {
					dp := dps.At(d)
					p := point{metric: m.Name(), value: dp.IntValue()}
					if v, ok := dp.Attributes().Get(attrService); ok {
						p.service = v.Str()
					}
					if v, ok := dp.Attributes().Get(attrRule); ok {
						p.rule = v.Str()
					}
					if v, ok := dp.Attributes().Get(attrReason); ok {
						p.reason = v.Str()
					}
					if v, ok := dp.Attributes().Get(attrOverflow); ok {
						p.overflow = v.Bool()
					}
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// sum adds the values of the points of metric that match the filter.
func sum(ps []point, metric string, match func(point) bool) int64 {
	var n int64
	for _, p := range ps {
		if p.metric == metric && (match == nil || match(p)) {
			n += p.value
		}
	}
	return n
}

func singleRule(r Rule) *Config {
	cfg := createDefaultConfig().(*Config)
	if r.Name == "" {
		r.Name = "redis"
	}
	if r.Condition == "" {
		r.Condition = defaultCondition
	}
	cfg.Rules = []Rule{r}
	return cfg
}
