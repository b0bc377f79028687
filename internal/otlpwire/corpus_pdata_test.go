package otlpwire

import (
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Requests built with pdata: the content half of the differential corpus. Each is encoded
// three ways by corpusBytes: pdata's own marshaler (descending field order, IDs always
// written), the ascending test encoder, and the ascending encoder writing zero values too.

type namedTraces struct {
	name string
	td   ptrace.Traces
}

func pdataCorpus() []namedTraces {
	return []namedTraces{
		{"empty", ptrace.NewTraces()},
		{"empty-resource", emptyResource()},
		{"empty-scope", emptyScope()},
		{"empty-span", emptySpan()},
		{"all-fields", allFields()},
		{"every-value", everyValue()}, // small enough for TestDifferentialMutations
		{"nested", nested()},
		{"realistic", genRequest(60, 3)},
		{"arrays-49", deepAttr(nestArrays(49))}, // pdata's deepest array nesting
		{"arrays-50", deepAttr(nestArrays(50))}, // one more: pdata refuses
		{"maps-32", deepAttr(nestMaps(32))},     // the deepest map nesting whose leaf has a value
		{"maps-33", deepAttr(nestMaps(33))},     // pdata refuses: the leaf value is at depth 100
	}
}

func emptyResource() ptrace.Traces {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty()
	return td
}

func emptyScope() ptrace.Traces {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	return td
}

func emptySpan() ptrace.Traces {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	return td
}

// putEveryValue puts one attribute of each type and edge: empty strings and bytes, extreme
// ints, doubles that render in each notation and the unrenderable ones, strings that need
// every kind of JSON escaping, arrays and maps holding all of it.
func putEveryValue(m pcommon.Map) {
	m.PutStr("str", "hello")
	m.PutStr("str.empty", "")
	m.PutStr("str.escapes", "q\" b\\ nl\n cr\r tab\t bs\b ff\f ctl\x01\x1f del\x7f html<>& ls\u2028 ps\u2029 é 😀 bad\xff\xfe end")
	m.PutStr("key \"quoted\"\n\xff", "odd key")
	m.PutInt("int", 42)
	m.PutInt("int.neg", -42)
	m.PutInt("int.max", math.MaxInt64)
	m.PutInt("int.min", math.MinInt64)
	for i, f := range []float64{0, math.Copysign(0, -1), 3.14159, -2.5, 1e-7, 1e-6, 1e20, 1e21, 123456789.123,
		5e-324, math.MaxFloat64, math.NaN(), math.Inf(1), math.Inf(-1)} {
		m.PutDouble("double."+strconv.Itoa(i), f)
	}
	m.PutBool("bool.true", true)
	m.PutBool("bool.false", false)
	m.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2, 0xfe, 0xff})
	m.PutEmptyBytes("bytes.empty")
	m.PutEmpty("empty")
	s := m.PutEmptySlice("slice")
	s.AppendEmpty().SetStr("a\"<b>")
	s.AppendEmpty().SetInt(-1)
	s.AppendEmpty().SetDouble(1e-9)
	s.AppendEmpty().SetBool(true)
	s.AppendEmpty().SetEmptyBytes().FromRaw([]byte("bytes"))
	s.AppendEmpty().SetEmptyBytes()
	s.AppendEmpty()
	s.AppendEmpty().SetEmptySlice()
	s.AppendEmpty().SetEmptyMap()
	inner := s.AppendEmpty().SetEmptyMap()
	inner.PutStr("z", "last")
	inner.PutInt("a", 1)
	inner.PutEmptySlice("m").AppendEmpty().SetStr("\u2028")
	m.PutEmptySlice("slice.empty")
	nan := m.PutEmptySlice("slice.nan")
	nan.AppendEmpty().SetDouble(1)
	nan.AppendEmpty().SetDouble(math.NaN())
	inf := m.PutEmptyMap("map.inf").PutEmptySlice("deep")
	inf.AppendEmpty().SetDouble(math.Inf(-1))
	mp := m.PutEmptyMap("map")
	mp.PutStr("zeta", "z")
	mp.PutStr("alpha", "a")
	mp.PutStr("\xff\xfe", "invalid key")
	mp.PutStr("Alpha", "A")
	mp.PutEmptyMap("nested").PutEmptySlice("list").AppendEmpty().SetDouble(1e21)
	m.PutEmptyMap("map.empty")
}

func allFields() ptrace.Traces {
	td := ptrace.NewTraces()
	for r := range 2 {
		rs := td.ResourceSpans().AppendEmpty()
		rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
		rs.Resource().Attributes().PutStr("service.name", "svc-"+strconv.Itoa(r))
		putEveryValue(rs.Resource().Attributes())
		rs.Resource().SetDroppedAttributesCount(3)
		for s := range 2 {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.SetSchemaUrl("scope-schema")
			ss.Scope().SetName("scope-" + strconv.Itoa(s))
			ss.Scope().SetVersion("v1." + strconv.Itoa(s))
			ss.Scope().Attributes().PutStr("scope.attr", "x")
			ss.Scope().SetDroppedAttributesCount(1)
			for i := range 3 {
				sp := ss.Spans().AppendEmpty()
				sp.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, byte(i)})
				sp.SetSpanID(pcommon.SpanID{8, 7, 6, 5, 4, 3, 2, byte(i + 1)})
				if i > 0 {
					sp.SetParentSpanID(pcommon.SpanID{8, 7, 6, 5, 4, 3, 2, byte(i)})
				}
				sp.TraceState().FromRaw("ot=th:8;rv:abcdef,vendor=x")
				sp.SetName("GET /api/" + strconv.Itoa(i))
				sp.SetKind(ptrace.SpanKind(i + 1))
				sp.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + i))
				sp.SetEndTimestamp(pcommon.Timestamp(1_700_000_000_250_000_000 + i))
				sp.SetFlags(0x301)
				sp.Status().SetCode(ptrace.StatusCode(i % 3))
				if i == 2 {
					sp.Status().SetMessage("boom")
				}
				putEveryValue(sp.Attributes())
				sp.SetDroppedAttributesCount(7)
				for e := range 2 {
					ev := sp.Events().AppendEmpty()
					ev.SetName("exception")
					ev.SetTimestamp(pcommon.Timestamp(1_700_000_000_100_000_000 + e))
					ev.Attributes().PutStr("exception.type", "io.EOF")
					ev.Attributes().PutInt("n", int64(e))
					ev.SetDroppedAttributesCount(1)
				}
				sp.SetDroppedEventsCount(2)
				l := sp.Links().AppendEmpty()
				l.SetTraceID(pcommon.TraceID{0xff, 0xee})
				l.SetSpanID(pcommon.SpanID{0xaa})
				l.TraceState().FromRaw("k=v")
				l.SetFlags(1)
				l.Attributes().PutBool("link.sampled", true)
				l.SetDroppedAttributesCount(4)
				sp.Links().AppendEmpty() // an empty link
				sp.SetDroppedLinksCount(5)
			}
		}
	}
	return td
}

func everyValue() ptrace.Traces {
	td := emptySpan()
	putEveryValue(td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes())
	return td
}

func nested() ptrace.Traces {
	td := emptySpan()
	attrs := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	// an array of maps of arrays of maps..., six levels, each level holding scalars too
	v := attrs.PutEmpty("deep")
	for level := range 6 {
		if level%2 == 0 {
			s := v.SetEmptySlice()
			s.AppendEmpty().SetInt(int64(level))
			v = s.AppendEmpty()
			s.AppendEmpty().SetStr("after")
		} else {
			m := v.SetEmptyMap()
			m.PutStr("level", strconv.Itoa(level))
			v = m.PutEmpty("next")
			m.PutBool("after", true)
		}
	}
	v.SetStr("leaf")
	return td
}

func deepAttr(v pcommon.Value) ptrace.Traces {
	td := emptySpan()
	v.CopyTo(td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutEmpty("deep"))
	return td
}

// nestArrays returns n arrays nested in one another around a string.
func nestArrays(n int) pcommon.Value {
	root := pcommon.NewValueEmpty()
	v := root
	for range n {
		v = v.SetEmptySlice().AppendEmpty()
	}
	v.SetStr("leaf")
	return root
}

// nestMaps returns n maps nested in one another around a string.
func nestMaps(n int) pcommon.Value {
	root := pcommon.NewValueEmpty()
	v := root
	for range n {
		v = v.SetEmptyMap().PutEmpty("k")
	}
	v.SetStr("leaf")
	return root
}

// genRequest builds a request shaped like an instrumented service mesh's: resources with a
// dozen attributes, two scopes each, spans with the HTTP and RPC attributes RED dimensions
// are drawn from, an exception event on one span in ten and a link on one in twenty.
func genRequest(spans, resources int) ptrace.Traces {
	td := ptrace.NewTraces()
	perResource := spans / resources
	n := 0
	for r := range resources {
		rs := td.ResourceSpans().AppendEmpty()
		ra := rs.Resource().Attributes()
		ra.PutStr("service.name", "service-"+strconv.Itoa(r))
		ra.PutStr("service.namespace", "shop")
		ra.PutStr("service.version", "1.4."+strconv.Itoa(r))
		ra.PutStr("deployment.environment.name", "production")
		ra.PutStr("host.name", "node-"+strconv.Itoa(r%4)+".cluster.local")
		ra.PutStr("k8s.pod.name", "service-"+strconv.Itoa(r)+"-7d9f8c6b5-x2x4q")
		ra.PutStr("k8s.namespace.name", "shop")
		ra.PutStr("telemetry.sdk.name", "opentelemetry")
		ra.PutStr("telemetry.sdk.language", "go")
		ra.PutStr("telemetry.sdk.version", "1.38.0")
		count := perResource
		if r == resources-1 {
			count = spans - n
		}
		for s := range 2 {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName([]string{"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp", "go.opentelemetry.io/otel/sdk/db"}[s])
			ss.Scope().SetVersion("0.63.0")
			half := count / 2
			if s == 1 {
				half = count - count/2
			}
			for range half {
				addSpan(ss.Spans().AppendEmpty(), n)
				n++
			}
		}
	}
	return td
}

func addSpan(sp ptrace.Span, n int) {
	sp.SetTraceID(pcommon.TraceID{byte(n), byte(n >> 8), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	sp.SetSpanID(pcommon.SpanID{byte(n), byte(n >> 8), 3, 4, 5, 6, 7, 8})
	if n%4 != 0 {
		sp.SetParentSpanID(pcommon.SpanID{byte(n - 1), byte((n - 1) >> 8), 3, 4, 5, 6, 7, 8})
	}
	routes := []string{"/api/cart", "/api/checkout", "/api/products/{id}", "/health"}
	methods := []string{"GET", "POST", "GET", "GET"}
	sp.SetName(methods[n%4] + " " + routes[n%4])
	sp.SetKind(ptrace.SpanKind(1 + n%5))
	sp.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + int64(n)*1000))
	sp.SetEndTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + int64(n)*1000 + int64(n%97)*1_000_000))
	if n%7 == 0 {
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("upstream timeout")
	}
	a := sp.Attributes()
	a.PutStr("http.request.method", methods[n%4])
	a.PutStr("http.route", routes[n%4])
	a.PutInt("http.response.status_code", int64([]int{200, 200, 201, 404, 500}[n%5]))
	a.PutStr("server.address", "api.shop.internal")
	a.PutInt("server.port", 8080)
	a.PutStr("network.protocol.version", "1.1")
	if n%3 == 0 {
		a.PutStr("db.system.name", "postgresql")
	}
	if n%10 == 0 {
		ev := sp.Events().AppendEmpty()
		ev.SetName("exception")
		ev.SetTimestamp(sp.StartTimestamp() + 10)
		ev.Attributes().PutStr("exception.type", "context.DeadlineExceeded")
		ev.Attributes().PutStr("exception.message", "context deadline exceeded")
	}
	if n%20 == 0 {
		l := sp.Links().AppendEmpty()
		l.SetTraceID(pcommon.TraceID{0xee, byte(n), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
		l.SetSpanID(pcommon.SpanID{0xee, byte(n), 3, 4, 5, 6, 7, 8})
		l.Attributes().PutStr("messaging.operation.type", "process")
	}
}
