//go:build integration

package e2e

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// The hotspotfilter settings of the test; the assertions derive from them.
const (
	hotspotBudget = 20 // fast Redis spans per second and service
	hotspotBurst  = 10
	hotspotSlow   = 20 * time.Millisecond
	hotspotLoad   = 4 * time.Second // how long the hot loop runs
)

const hotspotConfig = `
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[1]s
connectors:
  hotspotfilter:
    metrics_flush_interval: 200ms
    rules:
      - name: redis
        condition: 'kind == SPAN_KIND_CLIENT and (attributes["db.system"] == "redis" or attributes["db.system.name"] == "redis")'
        budget: %[3]d
        burst: %[4]d
        slow_threshold: %[5]s
exporters:
  # No queue: the exporter sends inside the connector's call, so the sink's
  # receive time is the decision time give or take scheduling.
  otlp_grpc/kept:
    endpoint: %[2]s
    tls:
      insecure: true
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false
  otlp_grpc/drops:
    endpoint: %[2]s
    tls:
      insecure: true
    sending_queue:
      enabled: false
    retry_on_failure:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces/in:
      receivers: [otlp]
      exporters: [hotspotfilter]
    traces/store:
      receivers: [hotspotfilter]
      exporters: [otlp_grpc/kept]
    metrics/drops:
      receivers: [hotspotfilter]
      exporters: [otlp_grpc/drops]
`

// TestHotspotFilterRedis drives a real redis-server from two services
// instrumented with redisotel, exports their spans to bin/otelcol-red running
// the hotspotfilter, and judges what comes out on both outputs.
func TestHotspotFilterRedis(t *testing.T) {
	redisAddr := testservice.Start(t, "redis")

	sink := startHotspotSink(t)
	otlpAddr := freeAddr(t)
	cfgFile := filepath.Join(t.TempDir(), "hotspot.yaml")
	cfg := fmt.Sprintf(hotspotConfig, otlpAddr, sink.addr, hotspotBudget, hotspotBurst, hotspotSlow)
	require.NoError(t, os.WriteFile(cfgFile, []byte(cfg), 0o600))
	col := StartCollector(t, cfgFile, nil)

	sent := runRedisLoad(t, otlpAddr, redisAddr)

	// The load must exercise every path, or the assertions below prove nothing.
	classes := map[spanClass]int{}
	for _, s := range sent.spans {
		classes[s.class]++
	}
	t.Logf("sent %d spans: %d fast Redis, %d error Redis, %d slow Redis, %d fast Redis with a child, %d other", len(sent.spans),
		classes[classFastRedis], classes[classErrorRedis], classes[classSlowRedis], classes[classParentRedis], classes[classOther])
	require.Greater(t, classes[classErrorRedis], 0, "no WRONGTYPE error span was produced")
	require.Greater(t, classes[classSlowRedis], 0, "no slow (DEBUG SLEEP) span was produced")
	require.Greater(t, classes[classFastRedis], 3*(hotspotBudget*int(hotspotLoad/time.Second)+hotspotBurst),
		"the hot loop was too slow to go over budget")

	// The metrics output accounts for every span: wait for the final counts.
	total := int64(len(sent.spans))
	var kept, dropped int64
	deadline := time.Now().Add(20 * time.Second)
	for {
		kept, dropped = sink.metricSum("hotspotfilter.spans.kept", nil), sink.metricSum("hotspotfilter.spans.dropped", nil)
		if kept+dropped == total || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, total, kept+dropped, "kept + dropped must equal the spans sent (kept %d, dropped %d)", kept, dropped)

	received := sink.receivedSpans()
	assert.EqualValues(t, kept, len(received), "the traces output carries exactly the spans counted as kept")
	assert.EqualValues(t, total-int64(len(received)), dropped)
	assert.Greater(t, dropped, int64(0))
	assert.EqualValues(t, 0, sink.metricSum("hotspotfilter.spans.dropped", map[string]string{"service.name": "catalog"}),
		"the quiet service stays within budget")
	assert.GreaterOrEqual(t, sink.maxHot(), int64(1), "the hot service shows on the hot-services gauge")

	// Every error, slow and non-Redis span survives, unchanged; nothing of
	// the quiet service is dropped.
	var fastKept []keptFast
	for id, s := range sent.spans {
		got, ok := received[id]
		switch {
		case s.class == classParentRedis:
			continue
		case s.class == classFastRedis && s.service == "cart":
			if ok {
				fastKept = append(fastKept, keptFast{exported: sent.exportedAt[id], received: got.receivedAt})
			}
			continue
		case !ok:
			t.Errorf("%s span %q of %s (class %s) was dropped", id, s.name, s.service, s.class)
			continue
		}
		assert.Equal(t, s.name, got.name, "span %s", id)
		assert.Equal(t, s.service, got.service, "span %s", id)
		assert.Equal(t, s.attrs, got.attrs, "span %s", id)
		assert.Equal(t, s.error, got.error, "span %s", id)
	}
	require.Greater(t, len(fastKept), hotspotBudget, "the budget lets spans through")

	// Fast Redis spans of the hot service: budget + burst per second. The
	// filter decides on a span between the moment the SDK began exporting it
	// and the moment the sink received it (the collector exports inside the
	// decision, without a queue). So spans received within one second were
	// decided within one second plus the longest such lag, and a token bucket
	// passes at most burst + budget·(1 s + lag) of them. The lag is measured,
	// usually milliseconds, which leaves the bound at budget + burst.
	sort.Slice(fastKept, func(i, j int) bool { return fastKept[i].received.Before(fastKept[j].received) })
	var lag time.Duration
	first, last := fastKept[0].exported, fastKept[0].received
	for _, k := range fastKept {
		require.False(t, k.exported.IsZero(), "export time of a kept span is unknown")
		lag = max(lag, k.received.Sub(k.exported))
		if k.exported.Before(first) {
			first = k.exported
		}
		if k.received.After(last) {
			last = k.received
		}
	}
	maxInSecond := 0
	for i, j := 0, 0; j < len(fastKept); j++ {
		for fastKept[j].received.Sub(fastKept[i].received) >= time.Second {
			i++
		}
		maxInSecond = max(maxInSecond, j-i+1)
	}
	perSecondBound := hotspotBurst + int(math.Floor(hotspotBudget*(1+lag.Seconds())))
	t.Logf("fast Redis spans of cart: %d sent, %d kept, at most %d in one second (budget %d + burst %d; export→sink lag ≤ %v, bound %d)",
		countClass(sent, "cart", classFastRedis), len(fastKept), maxInSecond, hotspotBudget, hotspotBurst, lag, perSecondBound)
	assert.LessOrEqual(t, maxInSecond, perSecondBound)
	// Over the whole run: a full bucket at the first decision, then the rate.
	assert.LessOrEqual(t, float64(len(fastKept)), hotspotBurst+hotspotBudget*last.Sub(first).Seconds())

	// A graceful stop emits the final counts while the metrics exporter still runs.
	require.NoError(t, col.Stop(t), "collector did not exit cleanly")
	assert.NotContains(t, col.Logs(), "failed to shutdown")
	assert.Equal(t, total, sink.metricSum("hotspotfilter.spans.kept", nil)+sink.metricSum("hotspotfilter.spans.dropped", nil))
}

// keptFast is when a kept fast span left the SDK and reached the sink.
type keptFast struct{ exported, received time.Time }

type spanClass string

const (
	classFastRedis   spanClass = "fast-redis"
	classErrorRedis  spanClass = "error-redis"
	classSlowRedis   spanClass = "slow-redis"
	classOther       spanClass = "other"
	classParentRedis spanClass = "parent-redis" // fast, with a child span
)

// sentSpan is what the load generator's SDK ended, classified the way the
// filter must judge it.
type sentSpan struct {
	service, name string
	class         spanClass
	error         bool
	attrs         int
	parent        string // hex parent span ID, "" for a root
}

type loadRecord struct {
	mu         sync.Mutex
	spans      map[string]sentSpan  // by hex span ID
	exportedAt map[string]time.Time // when the SDK began exporting the span
	start, end time.Time
}

// timedExporter notes when each span's export begins: no decision about the
// span can happen before.
type timedExporter struct {
	sdktrace.SpanExporter
	rec *loadRecord
}

func (e *timedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	now := time.Now()
	e.rec.mu.Lock()
	for _, s := range spans {
		e.rec.exportedAt[s.SpanContext().SpanID().String()] = now
	}
	e.rec.mu.Unlock()
	return e.SpanExporter.ExportSpans(ctx, spans)
}

func countClass(r *loadRecord, service string, c spanClass) int {
	n := 0
	for _, s := range r.spans {
		if s.service == service && s.class == c {
			n++
		}
	}
	return n
}

// recorder is a span processor that records every span the SDK ends,
// ahead of the batching exporter: the ground truth of what was sent.
type recorder struct {
	service string
	rec     *loadRecord
}

func (r *recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *recorder) Shutdown(context.Context) error                  { return nil }
func (r *recorder) ForceFlush(context.Context) error                { return nil }

func (r *recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	isRedis := false
	for _, kv := range s.Attributes() {
		if (kv.Key == "db.system" || kv.Key == "db.system.name") && kv.Value.AsString() == "redis" {
			isRedis = true
		}
	}
	isErr := s.Status().Code == codes.Error
	class := classOther
	switch {
	case !isRedis || s.SpanKind() != trace.SpanKindClient:
	case isErr:
		class = classErrorRedis
	case s.EndTime().Sub(s.StartTime()) >= hotspotSlow:
		class = classSlowRedis
	default:
		class = classFastRedis
	}
	parent := ""
	if p := s.Parent(); p.HasSpanID() {
		parent = p.SpanID().String()
	}
	r.rec.mu.Lock()
	r.rec.spans[s.SpanContext().SpanID().String()] = sentSpan{
		service: r.service, name: s.Name(), class: class, error: isErr, attrs: len(s.Attributes()), parent: parent,
	}
	r.rec.mu.Unlock()
}

// runRedisLoad runs a hot GET/SET loop from service "cart" (with WRONGTYPE
// errors and DEBUG SLEEP commands now and then) and a slow trickle from
// service "catalog", both exporting OTLP to collectorAddr, and returns every
// span the SDKs ended once all are exported.
func runRedisLoad(t *testing.T, collectorAddr, redisAddr string) *loadRecord {
	t.Helper()
	rec := &loadRecord{spans: map[string]sentSpan{}, exportedAt: map[string]time.Time{}}

	var exportErrs []error
	var errMu sync.Mutex
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		errMu.Lock()
		exportErrs = append(exportErrs, err)
		errMu.Unlock()
	}))
	defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))

	newProvider := func(service string) *sdktrace.TracerProvider {
		exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(collectorAddr), otlptracegrpc.WithInsecure())
		require.NoError(t, err)
		return sdktrace.NewTracerProvider(
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
			sdktrace.WithSpanProcessor(&recorder{service: service, rec: rec}),
			// Short batches keep the collector's decisions close to the load
			// in time; blocking and a large queue make sure no span is lost
			// before it reaches the collector.
			sdktrace.WithBatcher(&timedExporter{SpanExporter: exp, rec: rec},
				sdktrace.WithBatchTimeout(50*time.Millisecond),
				sdktrace.WithMaxQueueSize(1<<20),
				sdktrace.WithMaxExportBatchSize(512),
				sdktrace.WithBlocking()),
		)
	}
	newClient := func(tp trace.TracerProvider) *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
		require.NoError(t, redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(tp), redisotel.WithDialFilter(true)))
		return rdb
	}

	cartTP, catalogTP := newProvider("cart"), newProvider("catalog")
	cart, catalog := newClient(cartTP), newClient(catalogTP)
	defer cart.Close()
	defer catalog.Close()

	ctx := context.Background()
	require.NoError(t, cart.Set(ctx, "hotspot:string", "v", 0).Err())

	rec.start = time.Now()
	stop := rec.start.Add(hotspotLoad)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the hotspot: GET/SET as fast as it goes
		defer wg.Done()
		tracer := cartTP.Tracer("hotspot-load")
		lastSlow := time.Time{}
		for i := 0; time.Now().Before(stop); i++ {
			ctx, span := tracer.Start(ctx, "GET /cart", trace.WithSpanKind(trace.SpanKindServer))
			for j := 0; j < 10; j++ {
				key := fmt.Sprintf("hotspot:key:%d", (i*10+j)%100)
				if j%2 == 0 {
					_ = cart.Set(ctx, key, i, 0).Err()
				} else {
					_ = cart.Get(ctx, key).Err()
				}
			}
			if i%50 == 0 {
				// WRONGTYPE: a list command on a string key.
				err := cart.LPush(ctx, "hotspot:string", "x").Err()
				if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
					t.Errorf("LPUSH on a string key should fail with WRONGTYPE, got %v", err)
				}
			}
			if time.Since(lastSlow) > 500*time.Millisecond {
				if err := cart.Do(ctx, "DEBUG", "SLEEP", "0.05").Err(); err != nil {
					t.Errorf("DEBUG SLEEP failed (is enable-debug-command set?): %v", err)
				}
				lastSlow = time.Now()
			}
			span.End()
		}
	}()
	go func() { // a quiet service well within its budget
		defer wg.Done()
		tracer := catalogTP.Tracer("hotspot-load")
		for time.Now().Before(stop) {
			ctx, span := tracer.Start(ctx, "GET /catalog", trace.WithSpanKind(trace.SpanKindServer))
			_ = catalog.Get(ctx, "hotspot:catalog").Err() // redis.Nil: not an error span
			span.End()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	wg.Wait()
	rec.end = time.Now()

	flushCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, cartTP.Shutdown(flushCtx))
	require.NoError(t, catalogTP.Shutdown(flushCtx))
	errMu.Lock()
	require.Empty(t, exportErrs, "the SDK failed to export spans")
	errMu.Unlock()

	// A fast Redis span with a child (go-redis runs HELLO and CLIENT SETINFO
	// inside the first command on a new connection) is kept without budget
	// when its child shares its batch; whether it does depends on batching,
	// so such spans have a class of their own.
	for _, sp := range rec.spans {
		if p, ok := rec.spans[sp.parent]; ok && p.class == classFastRedis {
			p.class = classParentRedis
			rec.spans[sp.parent] = p
		}
	}
	return rec
}

// receivedSpan is a span the collector's traces output delivered.
type receivedSpan struct {
	service, name string
	error         bool
	attrs         int
	receivedAt    time.Time
}

// hotspotSink is the OTLP gRPC endpoint of both collector outputs: it keeps
// every span with its arrival time and the latest value of every cumulative
// metric point.
type hotspotSink struct {
	addr string

	mu      sync.Mutex
	spans   map[string]receivedSpan
	metrics map[string]metricPoint // by metric name and attributes
	hotMax  int64
}

type metricPoint struct {
	name  string
	attrs map[string]string
	value int64
}

type traceSink struct {
	ptraceotlp.UnimplementedGRPCServer
	s *hotspotSink
}

type metricSink struct {
	pmetricotlp.UnimplementedGRPCServer
	s *hotspotSink
}

func startHotspotSink(t *testing.T) *hotspotSink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &hotspotSink{addr: l.Addr().String(), spans: map[string]receivedSpan{}, metrics: map[string]metricPoint{}}
	srv := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(srv, &traceSink{s: s})
	pmetricotlp.RegisterGRPCServer(srv, &metricSink{s: s})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return s
}

func (ts *traceSink) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	now := time.Now()
	s := ts.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rss := req.Traces().ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		service := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			spans := sss.At(j).Spans()
			for k := 0; k < spans.Len(); k++ {
				sp := spans.At(k)
				s.spans[spanIDHex(sp.SpanID())] = receivedSpan{
					service: service, name: sp.Name(), error: sp.Status().Code() == ptrace.StatusCodeError,
					attrs: sp.Attributes().Len(), receivedAt: now,
				}
			}
		}
	}
	return ptraceotlp.NewExportResponse(), nil
}

func (ms *metricSink) Export(_ context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	s := ms.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rms := req.Metrics().ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			metrics := sms.At(j).Metrics()
			for k := 0; k < metrics.Len(); k++ {
				m := metrics.At(k)
				var dps pmetric.NumberDataPointSlice
				switch m.Type() {
				case pmetric.MetricTypeSum:
					dps = m.Sum().DataPoints()
				case pmetric.MetricTypeGauge:
					dps = m.Gauge().DataPoints()
				default:
					continue
				}
				for d := 0; d < dps.Len(); d++ {
					dp := dps.At(d)
					attrs := map[string]string{}
					dp.Attributes().Range(func(k string, v pcommon.Value) bool {
						attrs[k] = v.AsString()
						return true
					})
					key := fmt.Sprint(m.Name(), attrs)
					s.metrics[key] = metricPoint{name: m.Name(), attrs: attrs, value: dp.IntValue()}
					if m.Name() == "hotspotfilter.services.hot" {
						s.hotMax = max(s.hotMax, dp.IntValue())
					}
				}
			}
		}
	}
	return pmetricotlp.NewExportResponse(), nil
}

// metricSum adds the latest values of the points of name whose attributes
// include want.
func (s *hotspotSink) metricSum(name string, want map[string]string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
next:
	for _, p := range s.metrics {
		if p.name != name {
			continue
		}
		for k, v := range want {
			if p.attrs[k] != v {
				continue next
			}
		}
		n += p.value
	}
	return n
}

func (s *hotspotSink) maxHot() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hotMax
}

func (s *hotspotSink) receivedSpans() map[string]receivedSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]receivedSpan, len(s.spans))
	for k, v := range s.spans {
		out[k] = v
	}
	return out
}

func spanIDHex(id pcommon.SpanID) string { return fmt.Sprintf("%x", id[:]) }
