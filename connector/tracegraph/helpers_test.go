package tracegraph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// callGraph generates traces of services calling services, a database, a queue and peers that
// are not traced, each span of a call in the ptrace.Traces of its own service, so that a call's
// client and server halves arrive in separate ConsumeTraces calls, in either order.
type callGraph struct {
	rng      *rand.Rand
	services []string
	start    time.Time
	// exports are the per-service exports, in the order they are sent.
	exports []ptrace.Traces
}

func newCallGraph(seed uint64) *callGraph {
	return &callGraph{
		rng:      rand.New(rand.NewPCG(seed, seed^0x5eed)),
		services: []string{"frontend", "cart", "checkout", "payment", "shipping"},
		start:    time.Unix(1_700_000_000, 0),
	}
}

// export returns a fresh per-service export with one scope.
func (g *callGraph) export(service string, region string) ptrace.SpanSlice {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	if service != "" {
		rs.Resource().Attributes().PutStr("service.name", service)
	}
	if region != "" {
		rs.Resource().Attributes().PutStr("region", region)
	}
	g.exports = append(g.exports, td)
	return rs.ScopeSpans().AppendEmpty().Spans()
}

func (g *callGraph) span(ss ptrace.SpanSlice, kind ptrace.SpanKind, trace pcommon.TraceID, id, parent pcommon.SpanID) ptrace.Span {
	s := ss.AppendEmpty()
	s.SetName(kind.String())
	s.SetKind(kind)
	s.SetTraceID(trace)
	s.SetSpanID(id)
	s.SetParentSpanID(parent)
	// Durations across the default buckets (2 ms … 15 s) and beyond.
	d := time.Duration(g.rng.ExpFloat64() * float64(200*time.Millisecond))
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(g.start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(g.start.Add(d)))
	if g.rng.IntN(10) == 0 {
		s.Status().SetCode(ptrace.StatusCodeError)
	}
	if g.rng.IntN(2) == 0 {
		s.Attributes().PutStr("http.method", []string{"GET", "POST"}[g.rng.IntN(2)])
	}
	if g.rng.IntN(4) == 0 {
		s.Attributes().PutInt("http.status_code", int64(200+100*g.rng.IntN(4)))
	}
	return s
}

// traces generates n traces and returns the exports shuffled.
func (g *callGraph) traces(n int) []ptrace.Traces {
	regions := []string{"", "eu", "us"}
	for i := range n {
		trace := pcommon.TraceID{}
		binaryPut(trace[:], uint64(i)+1, g.rng.Uint64())
		next := uint64(0)
		newID := func() pcommon.SpanID {
			next++
			var id pcommon.SpanID
			binaryPut(id[:], next|uint64(i)<<32, 0)
			return id
		}
		svc := func() string { return g.services[g.rng.IntN(len(g.services))] }
		region := func() string { return regions[g.rng.IntN(len(regions))] }
		// A root SERVER span: the user calls the first service (a virtual node once expired).
		caller := svc()
		rootID := newID()
		g.span(g.export(caller, region()), ptrace.SpanKindServer, trace, rootID, pcommon.SpanID{})
		parent := rootID
		for range 1 + g.rng.IntN(4) {
			callee := svc()
			clientID, serverID := newID(), newID()
			switch g.rng.IntN(8) {
			case 0: // a database, named: an edge at once
				c := g.span(g.export(caller, region()), ptrace.SpanKindClient, trace, clientID, parent)
				c.Attributes().PutStr("db.system", "postgresql")
				c.Attributes().PutStr("db.name", []string{"orders", "users"}[g.rng.IntN(2)])
			case 1: // a database with db.system only: a virtual node once expired
				c := g.span(g.export(caller, region()), ptrace.SpanKindClient, trace, clientID, parent)
				c.Attributes().PutStr("db.system", "redis")
			case 2: // an untraced peer
				c := g.span(g.export(caller, region()), ptrace.SpanKindClient, trace, clientID, parent)
				if g.rng.IntN(2) == 0 {
					c.Attributes().PutStr("peer.service", "stripe")
				}
			case 3: // a queue: PRODUCER → CONSUMER
				g.span(g.export(caller, region()), ptrace.SpanKindProducer, trace, clientID, parent)
				g.span(g.export(callee, region()), ptrace.SpanKindConsumer, trace, serverID, clientID)
			case 4: // a server whose client is not traced
				g.span(g.export(callee, region()), ptrace.SpanKindServer, trace, serverID, clientID)
			case 5: // a span of a resource without service.name, and an internal span
				g.span(g.export("", ""), ptrace.SpanKindClient, trace, clientID, parent)
				g.span(g.export(caller, ""), ptrace.SpanKindInternal, trace, serverID, parent)
			default: // a call between two services
				g.span(g.export(caller, region()), ptrace.SpanKindClient, trace, clientID, parent)
				g.span(g.export(callee, region()), ptrace.SpanKindServer, trace, serverID, clientID)
				parent, caller = serverID, callee
			}
		}
	}
	g.rng.Shuffle(len(g.exports), func(i, j int) { g.exports[i], g.exports[j] = g.exports[j], g.exports[i] })
	return g.exports
}

func binaryPut(b []byte, hi, lo uint64) {
	for i := range 8 {
		b[i] = byte(hi >> (8 * (7 - i)))
		if len(b) > 8 {
			b[8+i] = byte(lo >> (8 * (7 - i)))
		}
	}
}

// point is one data point, flattened for comparison.
type point struct {
	Unit      string
	Int       int64
	Count     uint64
	Sum       float64
	Bounds    []float64
	Buckets   []uint64
	Scale     int32
	Zero      uint64
	PosOffset int32
	Pos       []uint64
	Min, Max  float64
}

// flatten returns the data points of md by "metric{sorted attributes}".
func flatten(md pmetric.Metrics) map[string]point {
	out := map[string]point{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				add := func(attrs pcommon.Map, p point) {
					p.Unit = m.Unit()
					key := m.Name() + attrString(attrs)
					if _, dup := out[key]; dup {
						panic("duplicate data point " + key)
					}
					out[key] = p
				}
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for d := 0; d < m.Sum().DataPoints().Len(); d++ {
						dp := m.Sum().DataPoints().At(d)
						add(dp.Attributes(), point{Int: dp.IntValue()})
					}
				case pmetric.MetricTypeHistogram:
					for d := 0; d < m.Histogram().DataPoints().Len(); d++ {
						dp := m.Histogram().DataPoints().At(d)
						add(dp.Attributes(), point{Count: dp.Count(), Sum: dp.Sum(), Bounds: dp.ExplicitBounds().AsRaw(), Buckets: dp.BucketCounts().AsRaw()})
					}
				case pmetric.MetricTypeExponentialHistogram:
					for d := 0; d < m.ExponentialHistogram().DataPoints().Len(); d++ {
						dp := m.ExponentialHistogram().DataPoints().At(d)
						add(dp.Attributes(), point{
							Count: dp.Count(), Sum: dp.Sum(), Scale: dp.Scale(), Zero: dp.ZeroCount(),
							PosOffset: dp.Positive().Offset(), Pos: dp.Positive().BucketCounts().AsRaw(),
							Min: dp.Min(), Max: dp.Max(),
						})
					}
				default:
					panic(fmt.Sprintf("unexpected metric type %v", m.Type()))
				}
			}
		}
	}
	return out
}

func attrString(m pcommon.Map) string {
	var kv []string
	for k, v := range m.All() {
		kv = append(kv, k+"="+v.AsString())
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

// sortedKeys returns m's keys in order, for readable failures.
func sortedKeys(m map[string]point) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// settle returns once the aggregator has applied every batch queued so far. A sleeping
// aggregator wakes when the batch it armed for is complete, so settle completes it with empty
// batches (from the pool, as a producer's would be), as a quiet producer's next calls would.
func (c *connectorImp) settle() {
	for c.pipe.Queue.Len() > 0 || c.pipe.Queue.HeldBytes() > 0 {
		for range c.agg.wakeItems {
			b := c.pipe.Free.Get()
			if b == nil {
				b = new(halfBatch)
			}
			b.reserve(c.hints) // it joins the pool: as large as a producer's
			_ = c.pipe.Queue.Put(context.Background(), b)
		}
		time.Sleep(50 * time.Microsecond)
	}
}
