// Package reduce is the producers' stage of the tracemetrics connector: a ConsumeTraces call
// reduces its request to one series.Batch of per-series deltas, without locks and, once the
// batch pool is warm, without allocating: series keys (series.Layout.AppendKey), span names
// (Namer: semantic conventions, rules, clustering templates), glob dimensions and sampling
// weights. The Reducer and the Namer are shared by every producer; each call writes only into
// its own batch and the scratch kept with it.
package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

import (
	"bytes"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/intake"
)

// Reducer turns ptrace.Traces into a series.Batch. It is shared by all producers and, but for
// its size hints (atomics), immutable after construction; everything else mutable lives in the
// batch.
type Reducer struct {
	*series.Plan // the configuration, derived once
	keyHash      func([]byte) uint64
	spanFams     []*series.Family
	eventsFam    *series.Family // nil without the events metric
	withGlobs    bool           // a family has glob dimensions
	hints        *intake.SizeHints
	// names renames spans (span_name); nil when off. Its rule cache and counters are atomics,
	// shared by the producers and read by the telemetry.
	names   *Namer
	weights Weighting // sampling
}

// New returns the reducer of plan p: series identities hashed with keyHash, span names from
// names (nil: as they are), weights of sampled spans from weights, and batches grown to hints
// (series.NumHints slots) before they are filled.
func New(p *series.Plan, keyHash func([]byte) uint64, names *Namer, weights Weighting, hints *intake.SizeHints) *Reducer {
	r := &Reducer{Plan: p, keyHash: keyHash, spanFams: p.SpanFamilies(), hints: hints, names: names, weights: weights}
	if p.EventsFamily >= 0 {
		r.eventsFam = p.Families[p.EventsFamily]
	}
	for _, f := range p.Families {
		r.withGlobs = r.withGlobs || f.Globs != nil
	}
	return r
}

// producerScratch is what a producer needs while it reduces a request, kept with its batch
// (deltaBatch.scratch) so that it is pooled with it.
type producerScratch struct {
	names   nameScratch    // span names built by span_name (names.go)
	globs   globScratch    // glob dimensions' answers and matches (globdims.go)
	weights traceStateMemo // the last tracestate parsed (Weighting)
}

// Footprint is the scratch's heap in bytes.
func (s *producerScratch) Footprint() int64 {
	return int64(cap(s.names.semconv)+cap(s.names.rule.out)) + s.globs.footprint()
}

// scratchOf returns b's producer scratch, made on the batch's first request.
func scratchOf(b *series.Batch) *producerScratch {
	if s, ok := b.Scratch.(*producerScratch); ok {
		return s
	}
	s := &producerScratch{}
	s.names.cluster = &b.Clusters
	b.Scratch = s
	return s
}

// Reduce adds the spans of td to b. Resources without service.name are skipped, as
// spanmetrics skips them.
func (r *Reducer) Reduce(b *series.Batch, td ptrace.Traces) {
	sc := scratchOf(b)
	rss := td.ResourceSpans()
	// The table starts small and doubles as series arrive (upsert): counting the spans first
	// would walk every resource and scope once more, cold, for nothing else.
	b.Reserve(r.hints)
	b.PrepareTable(0, int(r.hints.Get(series.HintTable)))
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		resAttrs := rs.Resource().Attributes()
		svc, ok := resAttrs.Get(series.ServiceNameKey)
		if !ok {
			continue
		}
		svcName := svc.Str()
		res := r.addResource(b, resAttrs, svcName)
		if r.withGlobs {
			sc.globs.setResource(r.Families, resAttrs)
		}
		resHash := b.Resources[res].Hash
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			scope := ss.Scope()
			withScope := scope.Name() != "" && slices.Contains(r.Scopes, scope.Name())
			spans := ss.Spans()
			b.Spans += int64(spans.Len())
			for k := 0; k < spans.Len(); k++ {
				if k%touchAhead == 0 && spans.Len()-k >= minTouch {
					end := min(k+touchAhead, spans.Len())
					b.Touch ^= touchSpans(spans, k, end)
				}
				r.reduceSpan(b, sc, res, resHash, svcName, resAttrs, scope, withScope, spans.At(k))
			}
		}
	}
	b.Measure(r.hints)
	if r.withGlobs {
		sc.globs.release(r.Families)
	}
	if r.names != nil {
		r.names.publish(&sc.names)
	}
	sc.weights = traceStateMemo{} // do not keep the request's memory alive
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

func (r *Reducer) addResource(b *series.Batch, attrs pcommon.Map, svc string) uint32 {
	keyOff := len(b.Arena)
	b.Arena = b.Sorter.AppendSorted(b.Arena, attrs, r.KeyAttrs)
	key := series.Ref{Off: uint32(keyOff), N: uint32(len(b.Arena) - keyOff)}
	b.ArenaPeak = max(b.ArenaPeak, len(b.Arena))
	h := r.keyHash(b.Bytes(key))
	// A batch usually holds a resource once; when it repeats, reuse the first entry.
	for i := range b.Resources {
		if b.Resources[i].Hash == h && bytes.Equal(b.Bytes(b.Resources[i].Key), b.Bytes(key)) {
			b.Arena = b.Arena[:keyOff]
			return uint32(i)
		}
	}
	full := key
	if r.KeyAttrs != nil {
		off := len(b.Arena)
		b.Arena = b.Sorter.AppendSorted(b.Arena, attrs, nil)
		full = series.Ref{Off: uint32(off), N: uint32(len(b.Arena) - off)}
	}
	off := len(b.Arena)
	b.Arena = append(b.Arena, svc...)
	b.Resources = append(b.Resources, series.BatchResource{Hash: h, Key: key, Full: full, Service: series.Ref{Off: uint32(off), N: uint32(len(svc))}})
	return uint32(len(b.Resources) - 1)
}

func (r *Reducer) reduceSpan(b *series.Batch, sc *producerScratch, res uint32, resHash uint64, svc string, resAttrs pcommon.Map, scope pcommon.InstrumentationScope, withScope bool, span ptrace.Span) {
	// Protect against end timestamps before start timestamps: assume 0 duration (spanmetrics).
	value := 0.0
	if start, end := span.StartTimestamp(), span.EndTimestamp(); end > start {
		value = float64(end-start) / r.UnitNanos
	}
	var code int32
	if r.DurationFamily >= 0 {
		if r.Explicit != nil {
			code = int32(r.Explicit.Index(value))
		} else {
			code = series.ExpoIndex20(value)
		}
	}
	name := span.Name()
	if r.names != nil {
		name = r.names.name(&sc.names, svc, span)
	}
	withExemplar := r.Exemplars > 0 && !span.TraceID().IsEmpty()
	isError := span.Status().Code() == ptrace.StatusCodeError
	w, extrapolated := r.weights.weight(b, &sc.weights, span)
	if w != 1 && !b.Weighted {
		b.StartWeights()
	}

	for _, f := range r.spanFams {
		var globs []series.GlobMatch
		if f.Globs != nil {
			globs = sc.globs.collect(f, span.Attributes(), nil)
		}
		off := len(b.Arena)
		b.Arena = r.AppendKey(b.Arena, f, resHash, svc, name, span, scope, withScope, resAttrs, nil, extrapolated, globs)
		idx := b.Upsert(res, f, off, r.keyHash(series.Identity(b.Arena[off:], f)))
		s := &b.Series[idx]
		s.Count++
		if f.Duration {
			s.Sum += value * w // exact for w == 1
			s.Min = min(s.Min, value)
			s.Max = max(s.Max, value)
			b.Obs = append(b.Obs, series.Observation{Series: idx, Code: code})
		}
		if b.Weighted {
			b.Weigh(idx, w, f.Duration)
		}
		if withExemplar {
			series.OfferExemplar(&b.Exemplars, &s.ExOff, &s.ExN, r.Exemplars, &series.Exemplar{TraceID: span.TraceID(), SpanID: span.SpanID(), IsError: isError, Value: value})
		}
	}
	if r.eventsFam == nil {
		return
	}
	events := span.Events()
	for l := 0; l < events.Len(); l++ {
		evAttrs := events.At(l).Attributes()
		var globs []series.GlobMatch
		if r.eventsFam.Globs != nil {
			globs = sc.globs.collect(r.eventsFam, span.Attributes(), &evAttrs)
		}
		off := len(b.Arena)
		b.Arena = r.AppendKey(b.Arena, r.eventsFam, resHash, svc, name, span, scope, withScope, resAttrs, &evAttrs, extrapolated, globs)
		idx := b.Upsert(res, r.eventsFam, off, r.keyHash(series.Identity(b.Arena[off:], r.eventsFam)))
		s := &b.Series[idx]
		s.Count++
		if b.Weighted {
			b.Weigh(idx, w, false)
		}
		if withExemplar {
			series.OfferExemplar(&b.Exemplars, &s.ExOff, &s.ExN, r.Exemplars, &series.Exemplar{TraceID: span.TraceID(), SpanID: span.SpanID(), IsError: isError, Value: value})
		}
	}
}
