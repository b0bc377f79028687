package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"bytes"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/sampling"
)

// reducer turns ptrace.Traces into a deltaBatch. It is shared by all producers and, but for
// its size hints (atomics), immutable after construction; everything else mutable lives in the
// batch.
type reducer struct {
	*plan     // the configuration, derived once
	keyHash   func([]byte) uint64
	spanFams  []*family
	eventsFam *family // nil without the events metric
	withGlobs bool    // a family has glob dimensions
	hints     *intake.SizeHints
	// names renames spans (span_name); nil when off. Its rule cache and counters are atomics,
	// shared by the producers and read by the telemetry.
	names   *spanNamer
	weights weighting // sampling
}

func newReducer(p *plan, keyHash func([]byte) uint64, names *spanNamer, weights weighting) *reducer {
	r := &reducer{plan: p, keyHash: keyHash, spanFams: p.spanFamilies(), hints: intake.NewSizeHints(numHints, hintLimit),
		names: names, weights: weights}
	if p.eventsFamily >= 0 {
		r.eventsFam = p.families[p.eventsFamily]
	}
	for _, f := range p.families {
		r.withGlobs = r.withGlobs || f.globs != nil
	}
	return r
}

// producerScratch is what a producer needs while it reduces a request, kept with its batch
// (deltaBatch.scratch) so that it is pooled with it.
type producerScratch struct {
	names nameScratch // span names built by span_name (spanname.go)
	globs globScratch // glob dimensions' answers and matches (globdims.go)
	// The last tracestate parsed, and what it said (sampling.go).
	lastTS     string
	lastCount  float64
	lastStatus sampling.Status
}

// Footprint is the scratch's heap in bytes.
func (s *producerScratch) Footprint() int64 {
	return int64(cap(s.names.semconv)+cap(s.names.rule)) + s.globs.footprint()
}

// scratchOf returns b's producer scratch, made on the batch's first request.
func scratchOf(b *deltaBatch) *producerScratch {
	if s, ok := b.scratch.(*producerScratch); ok {
		return s
	}
	s := &producerScratch{}
	s.names.cluster = &b.clusters
	b.scratch = s
	return s
}

// reduce adds the spans of td to b. Resources without service.name are skipped, as
// spanmetrics skips them.
func (r *reducer) reduce(b *deltaBatch, td ptrace.Traces) {
	sc := scratchOf(b)
	rss := td.ResourceSpans()
	// The table starts small and doubles as series arrive (upsert): counting the spans first
	// would walk every resource and scope once more, cold, for nothing else.
	b.reserve(r.hints)
	b.prepareTable(0, int(r.hints.Get(hintTable)))
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		resAttrs := rs.Resource().Attributes()
		svc, ok := resAttrs.Get(serviceNameKey)
		if !ok {
			continue
		}
		svcName := svc.Str()
		res := r.addResource(b, resAttrs, svcName)
		if r.withGlobs {
			sc.globs.setResource(r.families, resAttrs)
		}
		resHash := b.resources[res].hash
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			scope := ss.Scope()
			withScope := scope.Name() != "" && slices.Contains(r.scopes, scope.Name())
			spans := ss.Spans()
			b.spans += int64(spans.Len())
			for k := 0; k < spans.Len(); k++ {
				if k%touchAhead == 0 && spans.Len()-k >= minTouch {
					end := min(k+touchAhead, spans.Len())
					b.touch ^= touchSpans(spans, k, end)
				}
				r.reduceSpan(b, sc, res, resHash, svcName, resAttrs, scope, withScope, spans.At(k))
			}
		}
	}
	b.measure(r.hints)
	if r.withGlobs {
		sc.globs.release(r.families)
	}
	if r.names != nil {
		r.names.publish(&sc.names)
	}
	sc.lastTS = "" // do not keep the request's memory alive
}

// touchAhead is how many spans touchSpans reads ahead of reduceSpan; minTouch the fewest
// worth a pass of their own.
const (
	touchAhead = 64
	minTouch   = 8
)

// touchSpans reads spans [from, to): the span, its name, its attributes and their string
// values, and nothing else. With many series the input is not in the CPU caches and each span
// is a chain of dependent loads; reduceSpan does so much work per span that the CPU cannot
// overlap one span's cache misses with the next one's, while this loop is short enough for
// many spans' misses to be in flight at once. reduceSpan then finds them cached: at 100k
// series and 1000 spans per batch this costs less than it saves (BenchmarkReduce, README.md).
// The result only keeps the compiler from dropping the reads.
func touchSpans(spans ptrace.SpanSlice, from, to int) byte {
	var t byte
	for k := from; k < to; k++ {
		span := spans.At(k)
		name := span.Name()
		t ^= byte(span.EndTimestamp()) ^ byte(len(name))
		if len(name) > 0 {
			t ^= name[0]
		}
		for _, v := range span.Attributes().All() {
			if v.Type() == pcommon.ValueTypeStr {
				if s := v.Str(); len(s) > 0 {
					t ^= s[0]
				}
			}
		}
	}
	return t
}

func (r *reducer) addResource(b *deltaBatch, attrs pcommon.Map, svc string) uint32 {
	keyOff := len(b.arena)
	b.arena = b.sorter.appendSorted(b.arena, attrs, r.keyAttrs)
	key := ref{uint32(keyOff), uint32(len(b.arena) - keyOff)}
	b.arenaPeak = max(b.arenaPeak, len(b.arena))
	h := r.keyHash(b.bytes(key))
	// A batch usually holds a resource once; when it repeats, reuse the first entry.
	for i := range b.resources {
		if b.resources[i].hash == h && bytes.Equal(b.bytes(b.resources[i].key), b.bytes(key)) {
			b.arena = b.arena[:keyOff]
			return uint32(i)
		}
	}
	full := key
	if r.keyAttrs != nil {
		off := len(b.arena)
		b.arena = b.sorter.appendSorted(b.arena, attrs, nil)
		full = ref{uint32(off), uint32(len(b.arena) - off)}
	}
	off := len(b.arena)
	b.arena = append(b.arena, svc...)
	b.resources = append(b.resources, batchResource{hash: h, key: key, full: full, service: ref{uint32(off), uint32(len(svc))}})
	return uint32(len(b.resources) - 1)
}

func (r *reducer) reduceSpan(b *deltaBatch, sc *producerScratch, res uint32, resHash uint64, svc string, resAttrs pcommon.Map, scope pcommon.InstrumentationScope, withScope bool, span ptrace.Span) {
	// Protect against end timestamps before start timestamps: assume 0 duration (spanmetrics).
	value := 0.0
	if start, end := span.StartTimestamp(), span.EndTimestamp(); end > start {
		value = float64(end-start) / r.unitNanos
	}
	var code int32
	if r.durationFamily >= 0 {
		if r.explicit != nil {
			code = int32(r.explicit.Index(value))
		} else {
			code = expoIndex20(value)
		}
	}
	name := span.Name()
	if r.names != nil {
		name = r.names.name(&sc.names, svc, span)
	}
	withExemplar := r.exemplars > 0 && !span.TraceID().IsEmpty()
	isError := span.Status().Code() == ptrace.StatusCodeError
	w, extrapolated := r.weights.weight(b, sc, span)
	if w != 1 && !b.weighted {
		b.startWeights()
	}

	for _, f := range r.spanFams {
		var globs []globMatch
		if f.globs != nil {
			globs = sc.globs.collect(f, span.Attributes(), nil)
		}
		off := len(b.arena)
		b.arena = r.appendKey(b.arena, f, resHash, svc, name, span, scope, withScope, resAttrs, nil, extrapolated, globs)
		idx := b.upsert(res, f, off, r.keyHash(identity(b.arena[off:], f)))
		s := &b.series[idx]
		s.count++
		if f.duration {
			s.sum += value * w // exact for w == 1
			s.min = min(s.min, value)
			s.max = max(s.max, value)
			b.obs = append(b.obs, observation{series: idx, code: code})
		}
		if b.weighted {
			b.weigh(idx, w, f.duration)
		}
		if withExemplar {
			offerExemplar(&b.exemplars, &s.exOff, &s.exN, r.exemplars, &exemplar{traceID: span.TraceID(), spanID: span.SpanID(), isError: isError, value: value})
		}
	}
	if r.eventsFam == nil {
		return
	}
	events := span.Events()
	for l := 0; l < events.Len(); l++ {
		evAttrs := events.At(l).Attributes()
		var globs []globMatch
		if r.eventsFam.globs != nil {
			globs = sc.globs.collect(r.eventsFam, span.Attributes(), &evAttrs)
		}
		off := len(b.arena)
		b.arena = r.appendKey(b.arena, r.eventsFam, resHash, svc, name, span, scope, withScope, resAttrs, &evAttrs, extrapolated, globs)
		idx := b.upsert(res, r.eventsFam, off, r.keyHash(identity(b.arena[off:], r.eventsFam)))
		s := &b.series[idx]
		s.count++
		if b.weighted {
			b.weigh(idx, w, false)
		}
		if withExemplar {
			offerExemplar(&b.exemplars, &s.exOff, &s.exN, r.exemplars, &exemplar{traceID: span.TraceID(), spanID: span.SpanID(), isError: isError, value: value})
		}
	}
}
