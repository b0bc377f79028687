// Package reduce is the producers' stage of the tracemetrics connector: a ConsumeTraces call
// reduces its request to one series.Batch of per-series deltas, without locks and, once the
// batch pool is warm, without allocating: series keys (series.Layout.AppendKey), span names
// (Namer: semantic conventions, rules, clustering templates), glob dimensions and sampling
// weights. A request is ptrace.Traces or the bytes of one, decoded by internal/otlpwire (wire
// traces): the code is written once over internal/wiretraces/traceview and compiled for each,
// so both give the same batch. The Reducer and the Namer are shared by every producer; each
// call writes only into its own batch and the scratch kept with it.
package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

import (
	"bytes"
	"slices"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/intake"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Reducer turns a request, ptrace.Traces or decoded by otlpwire, into a series.Batch. It is
// shared by all producers and, but for its size hints (atomics), immutable after construction;
// everything else mutable lives in the batch.
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
	filter  Filtering // filter_policies (filter.go)
}

// New returns the reducer of plan p: series identities hashed with keyHash, span names from
// names (nil: as they are), weights of sampled spans from weights, the spans filter drops left
// out (and counted), and batches grown to hints (series.NumHints slots) before they are filled.
func New(p *series.Plan, keyHash func([]byte) uint64, names *Namer, weights Weighting, filter Filtering, hints *intake.SizeHints) *Reducer {
	r := &Reducer{Plan: p, keyHash: keyHash, spanFams: p.SpanFamilies(), hints: hints, names: names, weights: weights, filter: filter}
	if p.EventsFamily >= 0 {
		r.eventsFam = p.Families[p.EventsFamily]
	}
	for _, f := range p.Families {
		r.withGlobs = r.withGlobs || f.Globs != nil
	}
	return r
}

// producerScratch is what a producer needs while it reduces a request, kept with its batch
// (series.Batch.Scratch) so that it is pooled with it. Nothing in it outlives the request: what
// points into the request (names, values) is cleared when the request is reduced, so a pooled
// batch never keeps a request alive.
type producerScratch struct {
	names   nameScratch    // span names built by span_name (names.go)
	globs   globScratch    // glob dimensions' answers and matches (globdims.go)
	weights traceStateMemo // the last tracestate parsed (Weighting)
	// resDims is the resource's value of every named dimension of each family, read once
	// per resource.
	resDims [series.MaxFamilies][]series.DimValue
	// enc holds the tagged encodings of the bytes, map and slice values read for the request
	// (traceview.Val); reset per request.
	enc []byte
	// The walks over a request, one per source. They live here rather than on the stack: the
	// compiler lets pointers into them (a cursor's attributes) escape through the generic
	// calls, which would allocate them per request.
	pdata walk[traceview.Pdata]
	wire  walk[traceview.Wire]
}

// walk is a producer's walk over one request: the traceview cursors on the resource, scope,
// span and event being reduced, and what their series keys share.
type walk[S traceview.Source] struct {
	r        *Reducer
	b        *series.Batch
	sc       *producerScratch
	rs       traceview.Resource[S]
	scope    traceview.Scope[S]
	span     traceview.Span[S]
	ev       traceview.Event[S]
	evAttrs  traceview.Attrs[S]
	res      uint32 // the resource's index in the batch
	resAttrs traceview.Attrs[S]
	head     series.KeyHead // the resource's and the scope's part; the span's is set per span
}

// walkOf returns sc's walk for source S.
func walkOf[S traceview.Source](sc *producerScratch) *walk[S] {
	if traceview.IsWire[S]() {
		return any(&sc.wire).(*walk[S])
	}
	return any(&sc.pdata).(*walk[S])
}

// Footprint is the scratch's heap in bytes.
func (s *producerScratch) Footprint() int64 {
	n := 0
	for i := range s.resDims {
		n += cap(s.resDims[i])
	}
	return int64(cap(s.names.semconv)+cap(s.names.rule.out)+cap(s.enc)) + s.globs.footprint() +
		int64(n)*int64(unsafe.Sizeof(series.DimValue{}))
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

// release forgets what points into the request.
func (s *producerScratch) release() {
	s.pdata, s.wire = walk[traceview.Pdata]{}, walk[traceview.Wire]{}
	for i := range s.resDims {
		clear(s.resDims[i][:cap(s.resDims[i])])
	}
	s.enc = s.enc[:0]
	s.weights = traceStateMemo{}
}

// mayNameInExemplar reports whether a span that failed or not and ran from start to end (unix
// ns) may be an exemplar: with exemplars.slow_threshold only the spans the Elasticsearch branch
// keeps (an error, or end - start at least the threshold, its filter's condition; a span ending
// before it starts is not slow), so that every exemplar opens a stored span. tracegraph applies
// the same rule to the span its exemplar names.
func (r *Reducer) mayNameInExemplar(failed bool, start, end uint64) bool {
	return r.ExemplarSlow == 0 || failed || end >= start && end-start >= r.ExemplarSlow
}

// Reduce adds the spans of td to b. Resources without service.name are skipped, as
// spanmetrics skips them.
func (r *Reducer) Reduce(b *series.Batch, td ptrace.Traces) {
	reduce(r, b, traceview.FromPdata(td))
}

// ReduceWire adds to b the spans of the request d decoded, as Reduce adds those of its pdata:
// the same series, keys and values (TestWireSameMetrics).
func (r *Reducer) ReduceWire(b *series.Batch, d *otlpwire.Decoder) {
	reduce(r, b, traceview.FromWire(d))
}

// reduce is Reduce and ReduceWire, compiled once for each source (traceview).
func reduce[S traceview.Source](r *Reducer, b *series.Batch, req traceview.Request[S]) {
	sc := scratchOf(b)
	w := walkOf[S](sc)
	w.r, w.b, w.sc = r, b, sc
	// The table starts small and doubles as series arrive (upsert): counting the spans first
	// would walk every resource and scope once more, cold, for nothing else.
	b.Reserve(r.hints)
	b.PrepareTable(0, int(r.hints.Get(series.HintTable)))
	var filtered int64
	for i := range req.NumResources() {
		req.ReadResource(i, &w.rs)
		w.resAttrs = w.rs.Attributes()
		svc, ok := w.resAttrs.GetVal(series.ServiceNameKey, nil)
		if !ok {
			continue
		}
		w.head.Service = svc.Str()
		w.res = addResource(r, b, w.resAttrs, w.head.Service, &sc.enc)
		w.head.ResHash = b.Resources[w.res].Hash
		setResourceDims(r.Families, sc, w.resAttrs)
		if r.withGlobs {
			setResourceGlobs(&sc.globs, r.Families, w.resAttrs, &sc.enc)
		}
		for j := range w.rs.NumScopes() {
			w.rs.ReadScope(j, &w.scope)
			w.head.WithScope = w.scope.Name != "" && slices.Contains(r.Scopes, w.scope.Name)
			w.head.ScopeName, w.head.ScopeVersion = w.scope.Name, w.scope.Version
			n := w.scope.NumSpans()
			b.Spans += int64(n)
			for l := range n {
				if !traceview.IsWire[S]() && l%touchAhead == 0 && n-l >= minTouch {
					b.Touch ^= touchSpans(w.scope.PdataSpans(), l, min(l+touchAhead, n))
				}
				w.scope.ReadSpan(l, &w.span)
				if r.filter.filter != nil && filteredOut(&r.filter, w.resAttrs, &w.span, &filtered) {
					continue
				}
				w.reduceSpan()
			}
		}
	}
	b.Spans -= filtered // aggregated_spans counts the spans folded in; filtered_spans the others
	r.filter.publish(filtered)
	b.Measure(r.hints)
	if r.withGlobs {
		sc.globs.release(r.Families)
	}
	if r.names != nil {
		r.names.publish(&sc.names)
	}
	sc.release()
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
// The result only keeps the compiler from dropping the reads. It is about pdata's memory: a
// pointer per span and per value. A decoded request is a few flat tables and the request's
// bytes, which the decoder has just read.
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

// addResource adds the resource (its sorted key attributes and the full ones, hashed) to b,
// or finds it there, and returns its index.
func addResource[S traceview.Source](r *Reducer, b *series.Batch, attrs traceview.Attrs[S], svc string, enc *[]byte) uint32 {
	keyOff := len(b.Arena)
	b.Arena = series.AppendSortedWithout(&b.Sorter, b.Arena, attrs, r.KeyAttrs, r.ResourceDrop, enc)
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
		b.Arena = series.AppendSortedWithout(&b.Sorter, b.Arena, attrs, nil, r.ResourceDrop, enc)
		full = series.Ref{Off: uint32(off), N: uint32(len(b.Arena) - off)}
	}
	off := len(b.Arena)
	b.Arena = append(b.Arena, svc...)
	b.Resources = append(b.Resources, series.BatchResource{Hash: h, Key: key, Full: full, Service: series.Ref{Off: uint32(off), N: uint32(len(svc))}})
	return uint32(len(b.Resources) - 1)
}

// setResourceDims reads the resource's value of every named dimension, once per resource:
// spans without the attribute, and their events, take it from here.
func setResourceDims[S traceview.Source](fams []*series.Family, sc *producerScratch, attrs traceview.Attrs[S]) {
	for _, f := range fams {
		rd := slices.Grow(sc.resDims[f.Index][:0], len(f.Dims))[:len(f.Dims)]
		for i := range f.Dims {
			rd[i] = series.DimValue{}
			if !f.Dims[i].SamplingMethod && f.Dims[i].Mapping == nil {
				rd[i].Value, rd[i].Found = attrs.GetVal(f.Dims[i].Name, &sc.enc)
			}
		}
		sc.resDims[f.Index] = rd
	}
}

// reduceSpan keys the span under the cursor into the batch, in every family.
func (k *walk[S]) reduceSpan() {
	r, b, sc, span := k.r, k.b, k.sc, &k.span
	start, end := span.StartTimestamp(), span.EndTimestamp()
	late := r.Late.Outside(&b.Late, b.TS, end) // counted in b.Late
	if late && r.Late.Mode == latespans.Drop {
		return // late_spans: drop
	}
	k.head.Late = late && r.Late.Mode == latespans.Separate
	// Protect against end timestamps before start timestamps: assume 0 duration (spanmetrics).
	value := 0.0
	if end > start {
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
	k.head.Name = span.Name()
	if r.names != nil {
		k.head.Name = nameOf(r.names, &sc.names, k.head.Service, span)
	}
	k.head.Kind, k.head.Status = span.Kind(), span.StatusCode()
	if r.WithStatusMessage {
		k.head.StatusMessage = span.StatusMessage()
	}
	isError := k.head.Status == ptrace.StatusCodeError
	withExemplar := r.Exemplars > 0 && !span.TraceID().IsEmpty() && r.mayNameInExemplar(isError, uint64(start), uint64(end))
	w, extrapolated := weightOf(&r.weights, b, &sc.weights, span, k.resAttrs)
	if w != 1 && !b.Weighted {
		b.StartWeights()
	}
	spanAttrs := span.Attributes()
	dims := series.Dims[S]{Span: spanAttrs, Enc: &sc.enc, Extrapolated: extrapolated, ResAttrs: k.resAttrs}

	for _, f := range r.spanFams {
		var globs []series.GlobMatch
		if f.Globs != nil {
			globs = collectGlobs(&sc.globs, f, spanAttrs, nil, &sc.enc)
		}
		dims.Resource = sc.resDims[f.Index]
		off := len(b.Arena)
		b.Arena = series.AppendKey(&r.Layout, b.Arena, f, &k.head, &dims, globs)
		idx := b.Upsert(k.res, f, off, r.keyHash(series.Identity(b.Arena[off:], f)))
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
	for l := range span.NumEvents() {
		span.ReadEvent(l, &k.ev)
		k.evAttrs = k.ev.Attributes()
		var globs []series.GlobMatch
		if r.eventsFam.Globs != nil {
			globs = collectGlobs(&sc.globs, r.eventsFam, spanAttrs, &k.evAttrs, &sc.enc)
		}
		dims.Event, dims.Resource = &k.evAttrs, sc.resDims[r.eventsFam.Index]
		off := len(b.Arena)
		b.Arena = series.AppendKey(&r.Layout, b.Arena, r.eventsFam, &k.head, &dims, globs)
		idx := b.Upsert(k.res, r.eventsFam, off, r.keyHash(series.Identity(b.Arena[off:], r.eventsFam)))
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
