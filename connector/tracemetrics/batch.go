package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"bytes"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/hash"
)

// keyHash hashes series and resource keys. Tests replace it with a colliding function to
// prove that equal hashes never merge distinct series.
var keyHash = hash.Sum64

// deltaBatch is what one ConsumeTraces call hands to the aggregator: the call's spans reduced
// to one entry per distinct series, with the canonical key bytes of each series and resource,
// the histogram observations, and exemplar candidates. It is pooled; after warm-up, reducing a
// batch allocates nothing.
type deltaBatch struct {
	ts        int64 // when the batch was reduced (clock), the series' last-seen and start time
	resources []batchResource
	series    []batchSeries
	obs       []observation
	exemplars []exemplar
	arena     []byte   // key bytes of resources and series
	table     []uint32 // open-addressing table over series: index+1, 0 empty

	sorter    attrSorter // resource attribute sorting
	arenaPeak int        // the arena's largest length (a key is written before it is cut back)

	touch byte // see touchSpans
}

// ref locates bytes in deltaBatch.arena.
type ref struct{ off, n uint32 }

func (b *deltaBatch) bytes(r ref) []byte { return b.arena[r.off : r.off+r.n] }

type batchResource struct {
	hash    uint64
	key     ref // identity: attributes (filtered by resource_metrics_key_attributes), sorted
	full    ref // output attributes, sorted; equal to key without a filter
	service ref // service.name value
}

type batchSeries struct {
	hash     uint64
	key      ref
	res      uint32
	fam      uint8
	count    uint64  // spans (or events) of the series in this batch
	sum      float64 // durations, in the histogram unit
	min, max float64
	exOff    int32 // first exemplar slot, -1 when none
	exN      int32
}

// observation is one duration: the explicit bucket index, or the exponential scale-20 index.
type observation struct {
	series uint32
	code   int32
}

func (b *deltaBatch) reset() {
	b.arenaPeak = 0
	b.sorter.peakAttrs, b.sorter.peakKeys = 0, 0
	b.resources = b.resources[:0]
	b.series = b.series[:0]
	b.obs = b.obs[:0]
	b.exemplars = b.exemplars[:0]
	b.arena = b.arena[:0]
}

func (b *deltaBatch) empty() bool { return len(b.series) == 0 }

// prepareTable sizes the series table for about n series and clears it.
func (b *deltaBatch) prepareTable(n, capHint int) {
	size := 16
	if n > 4 {
		size = 1 << bits.Len(uint(n*2-1))
	}
	if cap(b.table) < size {
		b.table = make([]uint32, size, max(size, capHint))
		return
	}
	b.table = b.table[:size]
	clear(b.table)
}

func (b *deltaBatch) growTable() {
	size := len(b.table) * 2
	if cap(b.table) >= size {
		b.table = b.table[:size]
		clear(b.table)
	} else {
		b.table = make([]uint32, size)
	}
	mask := uint64(size - 1)
	for i := range b.series {
		j := b.series[i].hash & mask
		for b.table[j] != 0 {
			j = (j + 1) & mask
		}
		b.table[j] = uint32(i + 1)
	}
}

// upsert returns the index of the series whose key was just appended to the arena at off,
// adding the series if new. The key is encoded in place: a known series truncates the arena
// back to off, a new one keeps it there, so no key is copied.
func (b *deltaBatch) upsert(res uint32, f *family, off int) uint32 {
	key := b.arena[off:]
	b.arenaPeak = max(b.arenaPeak, len(b.arena))
	id := identity(key, f)
	h := keyHash(id)
	mask := uint64(len(b.table) - 1)
	i := h & mask
	for {
		e := b.table[i]
		if e == 0 {
			break
		}
		s := &b.series[e-1]
		if s.hash == h && s.res == res && s.fam == f.index && bytes.Equal(identity(b.bytes(s.key), f), id) {
			b.arena = b.arena[:off]
			return e - 1
		}
		i = (i + 1) & mask
	}
	if (len(b.series)+1)*2 > len(b.table) {
		b.growTable()
		mask = uint64(len(b.table) - 1)
		i = h & mask
		for b.table[i] != 0 {
			i = (i + 1) & mask
		}
	}
	b.series = append(b.series, batchSeries{
		hash: h, key: ref{uint32(off), uint32(len(key))}, res: res, fam: f.index,
		min: math.Inf(1), max: math.Inf(-1), exOff: -1,
	})
	b.table[i] = uint32(len(b.series))
	return uint32(len(b.series) - 1)
}

// reducer turns ptrace.Traces into a deltaBatch. It is immutable after construction and
// shared by all producers; everything mutable lives in the batch.
type reducer struct {
	lay         *layout
	spanFams    []*family
	eventsFam   *family
	observe     bool // a family observes durations
	unitNanos   float64
	explicit    *explicitBuckets // nil for exponential
	exemplarMax int              // 0: exemplars off
	keyAttrs    map[string]struct{}
	scopes      []string
	hints       sizeHints
}

// sizeHints are the largest sizes batches have reached lately. A batch taken from the free list
// grows to them before it reduces anything, in one allocation per buffer, instead of doubling
// its way up over many requests: batches circulate through the free list in turn, and without
// this each one would keep allocating until it had met the largest request itself.
//
// "Lately" is this flush interval and the previous one: rotate (at each flush) forgets older
// maxima, so one large request does not make every batch created afterwards large while the
// traffic is made of small ones. Batches keep the capacity they have either way.
type sizeHints struct {
	cur  [numHints]atomic.Int64 // what batches are grown to: the largest since the last rotate but one
	next [numHints]atomic.Int64 // the largest since the last rotate
}

const (
	hintResources = iota
	hintSeries
	hintObs
	hintExemplars
	hintArena // in units of 64 bytes
	hintTable
	hintAttrs
	hintAttrKeys
	numHints
)

func (h *sizeHints) get(i int) int64 { return h.cur[i].Load() }

func (h *sizeHints) reserve(b *deltaBatch) {
	b.resources = reserve(b.resources, h.get(hintResources))
	b.series = reserve(b.series, h.get(hintSeries))
	b.obs = reserve(b.obs, h.get(hintObs))
	b.exemplars = reserve(b.exemplars, h.get(hintExemplars))
	b.arena = reserve(b.arena, 64*h.get(hintArena))
	b.sorter.attrs = reserve(b.sorter.attrs, h.get(hintAttrs))
	// The sorter's memo is kept across requests: grow it keeping its content.
	b.sorter.perm = regrow(b.sorter.perm, h.get(hintAttrs))
	b.sorter.memoLens = regrow(b.sorter.memoLens, h.get(hintAttrs))
	b.sorter.memoKeys = regrow(b.sorter.memoKeys, h.get(hintAttrKeys))
}

// hintLimit bounds every hint (in elements; the arena's in bytes, at 64 per element): one
// huge request must not make every pooled batch huge. Requests up to about 2048 series (a
// 2000-span request, ~300 KB of batch) are covered; larger ones grow their batch on their own,
// as without hints.
const hintLimit = 2048

// update raises the hints to what b's request used: lengths, not capacities, or a batch grown
// to a hint would keep that hint alive after the traffic that set it is gone.
func (h *sizeHints) update(b *deltaBatch) {
	h.raise(hintResources, len(b.resources))
	h.raise(hintSeries, len(b.series))
	h.raise(hintObs, len(b.obs))
	h.raise(hintExemplars, len(b.exemplars))
	h.raise(hintArena, (max(b.arenaPeak, len(b.arena))+63)/64)
	h.raise(hintTable, len(b.table))
	h.raise(hintAttrs, b.sorter.peakAttrs)
	h.raise(hintAttrKeys, b.sorter.peakKeys)
}

func (h *sizeHints) raise(i, n int) {
	raise(&h.cur[i], n)
	raise(&h.next[i], n)
}

// rotate starts a new interval: the hints become the largest sizes of the interval that ends.
// A producer raising a hint at the same moment may see its raise forgotten: the next request
// of that size raises it again.
func (h *sizeHints) rotate() {
	for i := range h.cur {
		h.cur[i].Store(h.next[i].Swap(0))
	}
}

// reserve returns s, empty, with room for n elements.
func reserve[T any](s []T, n int64) []T {
	if int64(cap(s)) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// regrow returns s, with its content, with room for n elements.
func regrow[T any](s []T, n int64) []T {
	if int64(cap(s)) < n {
		return slices.Grow(s, int(n)-len(s))
	}
	return s
}

func raise(v *atomic.Int64, n int) {
	n = min(n, hintLimit)
	for {
		cur := v.Load()
		if int64(n) <= cur || v.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

func newReducer(cfg *Config, lay *layout, explicit *explicitBuckets) *reducer {
	r := &reducer{
		lay:       lay,
		spanFams:  lay.spanFamilies(),
		observe:   lay.durationFamily >= 0,
		unitNanos: float64(cfg.Histogram.Unit.nanosPer()),
		explicit:  explicit,
		scopes:    cfg.IncludeInstrumentationScope,
	}
	if lay.eventsFamily >= 0 {
		r.eventsFam = lay.families[lay.eventsFamily]
	}
	if cfg.Exemplars.Enabled && cfg.Exemplars.MaxPerDataPoint > 0 {
		r.exemplarMax = cfg.Exemplars.MaxPerDataPoint
	}
	if len(cfg.ResourceMetricsKeyAttributes) > 0 {
		r.keyAttrs = make(map[string]struct{}, len(cfg.ResourceMetricsKeyAttributes))
		for _, k := range cfg.ResourceMetricsKeyAttributes {
			r.keyAttrs[k] = struct{}{}
		}
	}
	return r
}

// reduce adds the spans of td to b. Resources without service.name are skipped, as
// spanmetrics skips them.
func (r *reducer) reduce(b *deltaBatch, td ptrace.Traces) {
	rss := td.ResourceSpans()
	// The table starts small and doubles as series arrive (upsert): counting the spans first
	// would walk every resource and scope once more, cold, for nothing else.
	r.hints.reserve(b)
	b.prepareTable(0, int(r.hints.get(hintTable)))
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		resAttrs := rs.Resource().Attributes()
		svc, ok := resAttrs.Get(serviceNameKey)
		if !ok {
			continue
		}
		svcName := svc.Str()
		res := r.addResource(b, resAttrs, svcName)
		resHash := b.resources[res].hash
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			scope := ss.Scope()
			withScope := scope.Name() != "" && slices.Contains(r.scopes, scope.Name())
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				if k%touchAhead == 0 && spans.Len()-k >= minTouch {
					b.touch ^= touchSpans(spans, k, min(k+touchAhead, spans.Len()))
				}
				r.reduceSpan(b, res, resHash, svcName, resAttrs, scope, withScope, spans.At(k))
			}
		}
	}
	r.hints.update(b)
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
	h := keyHash(b.bytes(key))
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

func (r *reducer) reduceSpan(b *deltaBatch, res uint32, resHash uint64, svc string, resAttrs pcommon.Map, scope pcommon.InstrumentationScope, withScope bool, span ptrace.Span) {
	// Protect against end timestamps before start timestamps: assume 0 duration (spanmetrics).
	value := 0.0
	if start, end := span.StartTimestamp(), span.EndTimestamp(); end > start {
		value = float64(end-start) / r.unitNanos
	}
	var code int32
	if r.observe {
		if r.explicit != nil {
			code = int32(r.explicit.index(value))
		} else {
			code = expoIndex20(value)
		}
	}
	withExemplar := r.exemplarMax > 0 && !span.TraceID().IsEmpty()
	isError := span.Status().Code() == ptrace.StatusCodeError

	for _, f := range r.spanFams {
		off := len(b.arena)
		b.arena = r.appendKey(b.arena, f, resHash, svc, span, scope, withScope, resAttrs, nil)
		idx := b.upsert(res, f, off)
		s := &b.series[idx]
		s.count++
		if f.duration {
			s.sum += value
			s.min = min(s.min, value)
			s.max = max(s.max, value)
			b.obs = append(b.obs, observation{series: idx, code: code})
		}
		if withExemplar {
			offerExemplar(&b.exemplars, &s.exOff, &s.exN, r.exemplarMax, &exemplar{traceID: span.TraceID(), spanID: span.SpanID(), isError: isError, value: value})
		}
	}
	if r.eventsFam == nil {
		return
	}
	events := span.Events()
	for l := 0; l < events.Len(); l++ {
		evAttrs := events.At(l).Attributes()
		off := len(b.arena)
		b.arena = r.appendKey(b.arena, r.eventsFam, resHash, svc, span, scope, withScope, resAttrs, &evAttrs)
		idx := b.upsert(res, r.eventsFam, off)
		s := &b.series[idx]
		s.count++
		if withExemplar {
			offerExemplar(&b.exemplars, &s.exOff, &s.exN, r.exemplarMax, &exemplar{traceID: span.TraceID(), spanID: span.SpanID(), isError: isError, value: value})
		}
	}
}

// appendKey appends the series key of span in family f (see layout.go). Dimensions are looked
// up on the span, then the event (events family), then the resource, then the default.
func (r *reducer) appendKey(dst []byte, f *family, resHash uint64, svc string, span ptrace.Span, scope pcommon.InstrumentationScope, withScope bool, resAttrs pcommon.Map, evAttrs *pcommon.Map) []byte {
	l := r.lay
	dst = appendKeyHeader(dst, resHash, f.index)
	if l.withService {
		dst = appendStr(dst, svc)
	}
	if l.withName {
		dst = appendStr(dst, span.Name())
	}
	if l.withKind {
		dst = append(dst, kindByte(span.Kind()))
	}
	if l.withStatus {
		dst = append(dst, statusByte(span.Status().Code()))
	}
	if len(l.scopes) > 0 {
		if withScope {
			dst = append(dst, 1)
			dst = appendStr(dst, scope.Name())
			dst = appendStr(dst, scope.Version())
		} else {
			dst = append(dst, 0)
		}
	}
	if len(f.dims) == 0 {
		return dst
	}
	spanAttrs := span.Attributes()
	// The type tags follow the identity (see layout.go); the first ones are kept on the stack,
	// the rest, if ever, looked up again.
	var types [16]byte
	for i := range f.dims {
		v, ok := dimensionValue(&f.dims[i], spanAttrs, evAttrs, resAttrs)
		typ := tagAbsent
		switch {
		case ok:
			dst, typ = appendIdentity(dst, v)
		case f.dims[i].hasDef:
			dst, typ = append(dst, f.dims[i].defEnc...), tagStr
		default:
			dst = append(dst, tagAbsent)
		}
		if i < len(types) {
			types[i] = typ
		}
	}
	dst = append(dst, types[:min(len(f.dims), len(types))]...)
	for i := len(types); i < len(f.dims); i++ {
		v, ok := dimensionValue(&f.dims[i], spanAttrs, evAttrs, resAttrs)
		switch {
		case ok:
			dst = append(dst, typeTag(v))
		case f.dims[i].hasDef:
			dst = append(dst, tagStr)
		default:
			dst = append(dst, tagAbsent)
		}
	}
	return dst
}

// dimensionValue looks dimension d up on the span, then the event (events family), then the
// resource.
func dimensionValue(d *dimension, spanAttrs pcommon.Map, evAttrs *pcommon.Map, resAttrs pcommon.Map) (pcommon.Value, bool) {
	v, ok := spanAttrs.Get(d.name)
	if !ok && evAttrs != nil {
		v, ok = evAttrs.Get(d.name)
	}
	if !ok {
		v, ok = resAttrs.Get(d.name)
	}
	return v, ok
}
