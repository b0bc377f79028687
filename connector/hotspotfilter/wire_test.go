package hotspotfilter

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/connector/connectortest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-red/otelcol-red/connector/hotspotfilter/internal/metadata"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces"
)

// wireBatches returns a sequence of batches that exercises every outcome: budget, burst and
// excess for two services, an error, a slow span, a parent, and spans no rule selects.
func wireBatches() []ptrace.Traces {
	slow := redis("cart", 50)
	slow.dur = 20 * time.Millisecond
	failed := redis("cart", 51)
	failed.status = ptrace.StatusCodeError
	parent := testSpan{service: "cart", kind: ptrace.SpanKindServer, dur: time.Millisecond, id: 60}
	child := redis("cart", 61)
	child.parent = 60
	grandchild := redis("cart", 62)
	grandchild.parent = 61
	return []ptrace.Traces{
		redisBatch("cart", 1, 20),
		makeTraces(slow, failed, parent, child, grandchild, redis("checkout", 70), redis("", 71)),
		redisBatch("checkout", 100, 12),
	}
}

func encode(t *testing.T, td ptrace.Traces) []byte {
	b, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	return b
}

// TestWireTracesGiveTheSameOutputs: the same batches as pdata and as wire traces (both
// readings: the otlpwire receiver's and the otlpwire_encoding extension's) give the same kept
// spans and the same metrics.
func TestWireTracesGiveTheSameOutputs(t *testing.T) {
	cfg := singleRule(Rule{Budget: 5, Burst: 5, SlowThreshold: 10 * time.Millisecond, KeepErrors: true})
	run := func(t *testing.T, wrap func([]byte) ptrace.Traces) ([]ptrace.Traces, []point) {
		h := newHarness(t, cfg)
		for _, td := range wireBatches() {
			in := td
			if wrap != nil {
				in = wrap(encode(t, td))
				_, ok := wiretraces.Unwrap(in)
				require.True(t, ok)
				in.MarkReadOnly() // as a fan-out to several consumers shares it
			}
			h.consume(t, in)
			h.clock.Advance(100 * time.Millisecond)
		}
		return h.kept.AllTraces(), h.flushPoints(t)
	}
	wantKept, wantPoints := run(t, nil)
	require.NotEmpty(t, wantKept)
	assert.Positive(t, sum(wantPoints, metricDropped, nil), "the batches must drop spans, or the test shows nothing")
	for name, wrap := range map[string]func([]byte) ptrace.Traces{
		"Wrap":           wiretraces.Wrap,
		"WrapTracesData": wiretraces.WrapTracesData,
	} {
		t.Run(name, func(t *testing.T) {
			kept, ps := run(t, wrap)
			assert.Equal(t, wantKept, kept)
			assert.ElementsMatch(t, wantPoints, ps)
			for _, td := range kept {
				_, ok := wiretraces.Unwrap(td)
				assert.False(t, ok, "the traces output is pdata")
			}
		})
	}
}

// TestWireTracesMetricsOnly: alone, the metrics output judges wire traces as it judges pdata.
func TestWireTracesMetricsOnly(t *testing.T) {
	cfg := singleRule(Rule{Budget: 1, Burst: 2, KeepErrors: true})
	counts := func(t *testing.T, td ptrace.Traces) []point {
		set := connectortest.NewNopSettings(metadata.Type)
		sink := new(consumertest.MetricsSink)
		c, err := newFactory(newFakeClock()).CreateTracesToMetrics(context.Background(), set, cfg, sink)
		require.NoError(t, err)
		require.NoError(t, c.Start(context.Background(), componenttest.NewNopHost()))
		require.NoError(t, c.ConsumeTraces(context.Background(), td))
		require.NoError(t, c.Shutdown(context.Background())) // final flush
		require.Len(t, sink.AllMetrics(), 1)
		return points(sink.AllMetrics()[0])
	}
	td := redisBatch("cart", 1, 5)
	want := counts(t, td)
	assert.EqualValues(t, 3, sum(want, metricDropped, nil))
	assert.ElementsMatch(t, want, counts(t, wiretraces.Wrap(encode(t, td))))
}

func TestWireTracesMalformedIsPermanent(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Budget: 1, KeepErrors: true}))
	b := encode(t, redisBatch("cart", 1, 3))
	td := wiretraces.Wrap(b[:len(b)-1])
	err := h.traces.ConsumeTraces(context.Background(), td)
	require.Error(t, err)
	assert.True(t, consumererror.IsPermanent(err))
	assert.Empty(t, h.kept.AllTraces())
	for _, p := range h.flushPoints(t) {
		if p.metric == metricKept || p.metric == metricDropped {
			assert.Zero(t, p.value, "nothing of a refused request is counted")
		}
	}
}

// TestRuleSelectingNothingPassesEverySpan backs what the wire traces' documentation offers a
// stock component: hotspotfilter with a rule whose condition is false outputs every span, as
// pdata.
func TestRuleSelectingNothingPassesEverySpan(t *testing.T) {
	h := newHarness(t, singleRule(Rule{Name: "none", Condition: "false", Budget: 0}))
	var want []uint64
	for _, td := range wireBatches() {
		h.consume(t, wiretraces.Wrap(encode(t, td)))
		rss := td.ResourceSpans()
		for i := range rss.Len() {
			spans := rss.At(i).ScopeSpans().At(0).Spans()
			for k := range spans.Len() {
				id := spans.At(k).SpanID()
				want = append(want, binary.BigEndian.Uint64(id[:]))
			}
		}
	}
	assert.Equal(t, want, h.keptIDs())
}
