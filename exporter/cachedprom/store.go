package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"encoding/hex"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"
)

// familyType is the Prometheus type of a metric family.
type familyType uint8

const (
	typeGauge familyType = iota
	typeUntyped
	typeCounter
	typeHistogram
	typeSummary
)

// seriesKind is how a series' state is accumulated and rendered.
type seriesKind uint8

const (
	kindNumber seriesKind = iota // gauge, untyped, counter
	kindHistogram
	kindExpHistogram
	kindSummary
)

// family is one Prometheus metric family. Its name, help and type never
// change once created, so the renderer reads them without the store lock.
type family struct {
	name   string
	help   string
	typ    familyType
	series []*series
}

// series is the state of one exported series. labels, fam and res are set
// at creation and never modified, which lets the renderer use them after the
// store lock is released; every other field belongs to the store lock.
type series struct {
	fam    *family
	key    string // the store key (OTLP identity)
	ident  string // Prometheus identity: family name and labels
	labels string // rendered label pairs: `a="x",b="y"`
	res    *resource
	kind   seriesKind
	idx    int   // position in fam.series
	seen   int64 // wall clock of the last update, unix nanoseconds

	start, ts pcommon.Timestamp
	value     float64 // number value

	count  uint64
	sum    float64
	hasSum bool

	// explicit-bucket histogram
	bounds  *boundSet
	buckets []uint64 // OTLP per-bucket counts, not cumulative

	// exponential histogram: the text formats only show count and sum, but
	// validity (scale, bucket population) decides whether it is shown at all.
	scale      int32
	zeroThresh float64
	population uint64 // zero count plus all bucket counts

	quantiles []quantile
	exemplars []exemplar // latest point's, kept only for OpenMetrics
}

type quantile struct{ q, v float64 }

type exemplar struct {
	value  float64
	ts     pcommon.Timestamp
	labels string // rendered `trace_id="..",span_id=".."`, empty when none
}

// resource is one job/instance pair, the source of a target_info series.
type resource struct {
	key    string
	labels string
	refs   int
}

// boundSet is an interned set of explicit histogram bounds with its bucket
// lines pre-rendered, shared by every series with the same bounds.
type boundSet struct {
	bounds []float64
	// order lists, in ascending bound order and without duplicate bounds,
	// the OTLP bucket index behind each Prometheus bucket, as client_golang
	// builds them from the prometheus exporter's map.
	order  []int
	leText []string // `le="0.005"}` per entry of order
	leOM   []string // `le="0.005"}` in OpenMetrics float form
	hasInf bool     // a bound is +Inf, so no synthetic +Inf bucket
}

// seriesStore holds all series state. Ingest and the renderer's copy phase
// take mu; scrapes never do.
type seriesStore struct {
	mu        sync.Mutex
	cfg       *Config
	logger    *zap.Logger
	names     *namer
	constLbls []labelPair
	exemplars bool

	series     map[string]*series
	identities map[string]*series
	families   map[string]*family
	resources  map[string]*resource
	boundSets  map[string]*boundSet

	// scratch buffers, reused across data points
	key     []byte
	attrs   []labelPair
	pairs   []labelPair
	lblBuf  []byte
	scratch []byte

	droppedOverCap int64 // since the last takeDropped
	rejected       int64 // refused like the stock exporter would, since the last takeDropped
}

func newSeriesStore(cfg *Config, logger *zap.Logger) *seriesStore {
	s := &seriesStore{
		cfg:        cfg,
		logger:     logger,
		names:      newNamer(cfg),
		exemplars:  cfg.EnableOpenMetrics,
		series:     map[string]*series{},
		identities: map[string]*series{},
		families:   map[string]*family{},
		resources:  map[string]*resource{},
		boundSets:  map[string]*boundSet{},
	}
	for k, v := range cfg.ConstLabels {
		s.constLbls = append(s.constLbls, labelPair{k, v})
	}
	return s
}

// scopeInfo is what a data point's identity and labels take from its scope
// and resource.
type scopeInfo struct {
	sig    []byte // identity part: scope name, version, schema url, sorted attributes, job, instance
	labels []labelPair
	res    *resource
}

// consume folds a batch into the store. It returns true when anything changed.
func (s *seriesStore) consume(md pmetric.Metrics, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	nowNanos := now.UnixNano()
	changed := false
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		resAttrs := rm.Resource().Attributes()
		job, hasJob := extractJob(resAttrs)
		inst, hasInst := extractInstance(resAttrs)
		var res *resource
		if hasJob && hasInst && job != "" && inst != "" {
			res = s.resource(job, inst, resAttrs)
		}
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			sm := sms.At(j)
			sc := s.scope(sm, job, hasJob, inst, hasInst, res)
			ms := sm.Metrics()
			for k := 0; k < ms.Len(); k++ {
				if s.addMetric(ms.At(k), &sc, nowNanos) {
					changed = true
				}
			}
		}
	}
	return changed
}

func (s *seriesStore) scope(sm pmetric.ScopeMetrics, job string, hasJob bool, inst string, hasInst bool, res *resource) scopeInfo {
	sc := sm.Scope()
	info := scopeInfo{res: res}
	b := make([]byte, 0, 128)
	b = append(b, sc.Name()...)
	b = append(b, 0xff)
	b = append(b, sc.Version()...)
	b = append(b, 0xff)
	b = append(b, sm.SchemaUrl()...)
	b = append(b, 0xff)
	attrs := sortedAttrs(nil, sc.Attributes())
	for _, a := range attrs {
		b = append(b, a.name...)
		b = append(b, 0xfe)
		b = append(b, a.value...)
		b = append(b, 0xff)
	}
	if hasJob {
		b = append(b, 'j')
		b = append(b, job...)
	}
	b = append(b, 0xff)
	if hasInst {
		b = append(b, 'i')
		b = append(b, inst...)
	}
	b = append(b, 0xff)
	info.sig = b

	if !s.cfg.WithoutScopeInfo {
		for _, a := range attrs {
			info.labels = append(info.labels, labelPair{"otel_scope_" + a.name, a.value})
		}
		info.labels = append(info.labels,
			labelPair{"otel_scope_name", sc.Name()},
			labelPair{"otel_scope_version", sc.Version()},
			labelPair{"otel_scope_schema_url", sm.SchemaUrl()})
	}
	if hasJob {
		info.labels = append(info.labels, labelPair{model.JobLabel, job})
	}
	if hasInst {
		info.labels = append(info.labels, labelPair{model.InstanceLabel, inst})
	}
	return info
}

// sortedAttrs appends the attributes, values as strings, sorted by key, so
// that identity does not depend on insertion order.
func sortedAttrs(dst []labelPair, m pcommon.Map) []labelPair {
	dst = dst[:0]
	for k, v := range m.All() {
		var sv string
		if v.Type() == pcommon.ValueTypeStr {
			sv = v.Str()
		} else {
			sv = v.AsString()
		}
		dst = append(dst, labelPair{k, sv})
	}
	if len(dst) > 1 {
		slices.SortFunc(dst, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	}
	return dst
}

// resource records the target_info labels of a job/instance pair; the last
// batch's attributes win.
func (s *seriesStore) resource(job, inst string, attrs pcommon.Map) *resource {
	key := job + "\xff" + inst
	r, ok := s.resources[key]
	if !ok {
		r = &resource{key: key}
		s.resources[key] = r
	}
	// Labels as the stock exporter builds them: every attribute but the three
	// mapped to job and instance, sanitised, values of colliding names joined
	// with ';', then job and instance.
	vals := map[string]string{}
	var order []string
	for k, v := range attrs.All() {
		switch k {
		case attrServiceName, attrServiceNamespace, attrServiceInstanceID:
			continue
		}
		name, err := s.names.labelName(k)
		if err != nil {
			s.rejected++
			return r
		}
		if old, ok := vals[name]; ok {
			vals[name] = old + ";" + v.AsString()
			continue
		}
		vals[name] = v.AsString()
		order = append(order, name)
	}
	vals[model.JobLabel] = job
	vals[model.InstanceLabel] = inst
	if _, ok := slicesIndex(order, model.JobLabel); !ok {
		order = append(order, model.JobLabel)
	}
	if _, ok := slicesIndex(order, model.InstanceLabel); !ok {
		order = append(order, model.InstanceLabel)
	}
	pairs := make([]labelPair, 0, len(order))
	for _, n := range order {
		pairs = append(pairs, labelPair{n, vals[n]})
	}
	slices.SortFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	if checkLabels(pairs) != nil {
		return r
	}
	s.lblBuf = appendLabels(s.lblBuf[:0], pairs)
	if r.labels != string(s.lblBuf) {
		r.labels = string(s.lblBuf)
	}
	return r
}

func slicesIndex(s []string, v string) (int, bool) {
	i := slices.Index(s, v)
	return i, i >= 0
}

func (s *seriesStore) addMetric(m pmetric.Metric, sc *scopeInfo, now int64) bool {
	var ftyp familyType
	var kind seriesKind
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		// The stock exporter means to expose gauges whose metadata says
		// prometheus.type=unknown as untyped, but its accumulator does not
		// copy metadata, so they come out as gauges. We match its output.
		ftyp, kind = typeGauge, kindNumber
	case pmetric.MetricTypeSum:
		sum := m.Sum()
		if sum.AggregationTemporality() == pmetric.AggregationTemporalityUnspecified {
			return false
		}
		if sum.AggregationTemporality() == pmetric.AggregationTemporalityDelta && !sum.IsMonotonic() {
			// A delta up-down counter cannot be made cumulative without its
			// start value; the prometheus exporter refuses it too.
			return false
		}
		ftyp, kind = typeGauge, kindNumber
		if sum.IsMonotonic() {
			ftyp = typeCounter
		}
	case pmetric.MetricTypeHistogram:
		ftyp, kind = typeHistogram, kindHistogram
	case pmetric.MetricTypeExponentialHistogram:
		ftyp, kind = typeHistogram, kindExpHistogram
	case pmetric.MetricTypeSummary:
		ftyp, kind = typeSummary, kindSummary
	default:
		return false
	}
	name, err := s.names.metricName(m)
	if err != nil {
		s.rejected++
		return false
	}

	switch kind {
	case kindNumber:
		var dps pmetric.NumberDataPointSlice
		delta := false
		if m.Type() == pmetric.MetricTypeGauge {
			dps = m.Gauge().DataPoints()
		} else {
			dps = m.Sum().DataPoints()
			delta = m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		}
		return addPoints(s, m, name, ftyp, kind, sc, now, dps, func(ser *series, isNew bool, dp pmetric.NumberDataPoint) bool {
			return s.updateNumber(ser, isNew, dp, delta)
		})
	case kindHistogram:
		h := m.Histogram()
		temporality := h.AggregationTemporality()
		return addPoints(s, m, name, ftyp, kind, sc, now, h.DataPoints(), func(ser *series, isNew bool, dp pmetric.HistogramDataPoint) bool {
			return s.updateHistogram(ser, isNew, dp, temporality)
		})
	case kindExpHistogram:
		h := m.ExponentialHistogram()
		temporality := h.AggregationTemporality()
		return addPoints(s, m, name, ftyp, kind, sc, now, h.DataPoints(), func(ser *series, isNew bool, dp pmetric.ExponentialHistogramDataPoint) bool {
			return updateExpHistogram(ser, isNew, dp, temporality)
		})
	case kindSummary:
		return addPoints(s, m, name, ftyp, kind, sc, now, m.Summary().DataPoints(), updateSummary)
	}
	return false
}

// addPoints finds or creates the series of every data point of dps and applies update to it;
// it reports whether any series changed.
func addPoints[P interface {
	Attributes() pcommon.Map
	Flags() pmetric.DataPointFlags
}, S interface {
	Len() int
	At(int) P
}](s *seriesStore, m pmetric.Metric, name string, ftyp familyType, kind seriesKind, sc *scopeInfo, now int64, dps S, update func(ser *series, isNew bool, dp P) bool) bool {
	changed := false
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		ser, isNew := s.lookup(m, name, ftyp, kind, sc, dp.Attributes(), dp.Flags(), now)
		if ser == nil {
			continue
		}
		if update(ser, isNew, dp) {
			ser.seen = now
			changed = true
		}
	}
	return changed
}

// lookup finds or creates the series of a data point. It returns nil when the
// point must be dropped: no recorded value (the series is deleted, as the
// stock exporter does), over max_series, or refused like the stock exporter
// would refuse it.
func (s *seriesStore) lookup(m pmetric.Metric, name string, ftyp familyType, kind seriesKind, sc *scopeInfo, attrs pcommon.Map, flags pmetric.DataPointFlags, now int64) (*series, bool) {
	s.attrs = sortedAttrs(s.attrs, attrs)
	k := s.key[:0]
	k = append(k, m.Name()...)
	k = append(k, 0xff, byte(m.Type()))
	k = append(k, sc.sig...)
	for _, a := range s.attrs {
		k = append(k, a.name...)
		k = append(k, 0xfe)
		k = append(k, a.value...)
		k = append(k, 0xff)
	}
	s.key = k
	ser, ok := s.series[string(k)] // no allocation for the lookup
	if flags.NoRecordedValue() {
		if ok {
			s.remove(ser)
		}
		return nil, false
	}
	if ok {
		return ser, false
	}
	if s.cfg.MaxSeries > 0 && len(s.series) >= s.cfg.MaxSeries {
		s.droppedOverCap++
		return nil, false
	}

	// A new series: build its labels once.
	pairs := s.pairs[:0]
	for _, a := range s.attrs {
		ln, err := s.names.labelName(a.name)
		if err != nil {
			s.rejected++
			return nil, false
		}
		pairs = append(pairs, labelPair{ln, a.value})
	}
	for _, l := range sc.labels {
		if strings.HasPrefix(l.name, "otel_scope_") && l.name != "otel_scope_name" && l.name != "otel_scope_version" && l.name != "otel_scope_schema_url" {
			ln, err := s.names.labelName(l.name)
			if err != nil {
				s.rejected++
				return nil, false
			}
			l.name = ln
		}
		pairs = append(pairs, l)
	}
	pairs = append(pairs, s.constLbls...)
	slices.SortFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	s.pairs = pairs
	if err := checkLabels(pairs); err != nil {
		s.rejected++
		s.logger.Debug("series refused", zap.String("metric", name), zap.Error(err))
		return nil, false
	}

	fam, ok := s.families[name]
	if !ok {
		fam = &family{name: name, help: m.Description(), typ: ftyp}
		s.families[name] = fam
	} else if fam.typ != ftyp {
		s.rejected++
		s.logger.Debug("instrument type conflict, keeping the existing type", zap.String("metric", name))
		return nil, false
	}

	s.lblBuf = appendLabels(s.lblBuf[:0], pairs)
	s.scratch = append(append(append(s.scratch[:0], name...), 0xff), s.lblBuf...)
	if _, dup := s.identities[string(s.scratch)]; dup {
		// Two OTLP series map to one Prometheus series: client_golang drops
		// the second as "collected before with the same name and label
		// values"; keep the first.
		s.rejected++
		if len(fam.series) == 0 {
			delete(s.families, name)
		}
		return nil, false
	}
	ser = &series{
		fam:    fam,
		key:    string(k),
		ident:  string(s.scratch),
		labels: string(s.lblBuf),
		res:    sc.res,
		kind:   kind,
		idx:    len(fam.series),
		seen:   now,
	}
	fam.series = append(fam.series, ser)
	s.series[ser.key] = ser
	s.identities[ser.ident] = ser
	if ser.res != nil {
		ser.res.refs++
	}
	return ser, true
}

// remove deletes a series; the caller holds mu.
func (s *seriesStore) remove(ser *series) {
	delete(s.series, ser.key)
	delete(s.identities, ser.ident)
	fam := ser.fam
	last := len(fam.series) - 1
	fam.series[ser.idx] = fam.series[last]
	fam.series[ser.idx].idx = ser.idx
	fam.series[last] = nil
	fam.series = fam.series[:last]
	if len(fam.series) == 0 {
		delete(s.families, fam.name)
	}
	if r := ser.res; r != nil {
		r.refs--
		if r.refs <= 0 {
			delete(s.resources, r.key)
		}
	}
}

// expire removes series not updated since before cutoff and returns how many
// it removed.
func (s *seriesStore) expire(cutoff time.Time) int {
	c := cutoff.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ser := range s.series {
		if ser.seen < c {
			s.remove(ser)
			n++
		}
	}
	// A resource whose data points were all refused never got a series.
	for k, r := range s.resources {
		if r.refs <= 0 {
			delete(s.resources, k)
		}
	}
	return n
}

func (s *seriesStore) takeDropped() (overCap, rejected int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	overCap, rejected = s.droppedOverCap, s.rejected
	s.droppedOverCap, s.rejected = 0, 0
	return overCap, rejected
}

func (s *seriesStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.series)
}

func numberValue(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// updateNumber follows the prometheus exporter's accumulator: older points
// are ignored; a delta continuing the previous point (its start equals the
// previous timestamp) is added, any other point replaces the value.
func (s *seriesStore) updateNumber(ser *series, isNew bool, dp pmetric.NumberDataPoint, delta bool) bool {
	v := numberValue(dp)
	start := dp.StartTimestamp()
	if !isNew {
		if dp.Timestamp() < ser.ts {
			return false
		}
		if delta && dp.StartTimestamp() == ser.ts {
			start = ser.start
			v += ser.value
		}
	}
	ser.value, ser.start, ser.ts = v, start, dp.Timestamp()
	if s.exemplars && ser.fam.typ == typeCounter {
		ser.exemplars = convertExemplars(ser.exemplars[:0], dp.Exemplars())
	}
	return true
}

func (s *seriesStore) updateHistogram(ser *series, isNew bool, dp pmetric.HistogramDataPoint, temporality pmetric.AggregationTemporality) bool {
	if isNew {
		s.setHistogram(ser, dp)
		return true
	}
	switch temporality {
	case pmetric.AggregationTemporalityDelta:
		if dp.StartTimestamp() != ser.ts {
			// Misaligned: a restart when it starts after the previous point,
			// otherwise a second writer, dropped.
			if dp.StartTimestamp() <= ser.ts {
				return false
			}
			s.setHistogram(ser, dp)
			return true
		}
		s.accumulateHistogram(ser, dp)
		return true
	case pmetric.AggregationTemporalityCumulative:
		if dp.Timestamp() < ser.ts {
			return false
		}
		s.setHistogram(ser, dp)
		return true
	}
	return false
}

func (s *seriesStore) setHistogram(ser *series, dp pmetric.HistogramDataPoint) {
	ser.start, ser.ts = dp.StartTimestamp(), dp.Timestamp()
	ser.count, ser.sum = dp.Count(), dp.Sum()
	ser.bounds = s.boundSet(dp.ExplicitBounds())
	ser.buckets = append(ser.buckets[:0], dp.BucketCounts().AsRaw()...)
	if s.exemplars {
		ser.exemplars = convertExemplars(ser.exemplars[:0], dp.Exemplars())
	}
}

// accumulateHistogram adds a delta point whose start is the stored point's
// timestamp. As in the stock exporter, the newer point's bounds win and
// counts are only summed when bounds are equal; the sum loses exemplars.
func (s *seriesStore) accumulateHistogram(ser *series, dp pmetric.HistogramDataPoint) {
	bounds := dp.ExplicitBounds()
	match := len(ser.bounds.bounds) == bounds.Len()
	for i := 0; match && i < bounds.Len(); i++ {
		match = ser.bounds.bounds[i] == bounds.At(i)
	}
	counts := dp.BucketCounts()
	if match {
		ser.count += dp.Count()
		ser.sum += dp.Sum()
		// The newer point's bucket count decides the length.
		newer := counts.Len()
		old := ser.buckets
		for i := 0; i < newer; i++ {
			var o uint64
			if i < len(old) {
				o = old[i]
			}
			if i < len(old) {
				old[i] = o + counts.At(i)
			} else {
				old = append(old, o+counts.At(i))
			}
		}
		ser.buckets = old[:newer]
	} else {
		ser.count, ser.sum = dp.Count(), dp.Sum()
		ser.buckets = append(ser.buckets[:0], counts.AsRaw()...)
		ser.bounds = s.boundSet(bounds)
	}
	if dp.Timestamp() >= ser.ts {
		ser.ts = dp.Timestamp()
	}
	ser.exemplars = ser.exemplars[:0]
}

// boundSet interns bounds; the key is their raw bits.
func (s *seriesStore) boundSet(b pcommon.Float64Slice) *boundSet {
	k := s.scratch[:0]
	for i := 0; i < b.Len(); i++ {
		bits := math.Float64bits(b.At(i))
		k = append(k, byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24), byte(bits>>32), byte(bits>>40), byte(bits>>48), byte(bits>>56))
	}
	s.scratch = k
	if bs, ok := s.boundSets[string(k)]; ok {
		return bs
	}
	bs := newBoundSet(b.AsRaw())
	if len(s.boundSets) > 10_000 {
		clear(s.boundSets) // series keep their own pointer; this only bounds the index
	}
	s.boundSets[string(k)] = bs
	return bs
}

func newBoundSet(bounds []float64) *boundSet {
	bs := &boundSet{bounds: bounds}
	first := map[float64]int{}
	uniq := make([]float64, 0, len(bounds))
	for i, b := range bounds {
		if _, ok := first[b]; !ok {
			first[b] = i
			uniq = append(uniq, b)
		}
	}
	sort.Float64s(uniq)
	for _, b := range uniq {
		bs.order = append(bs.order, first[b])
		bs.leText = append(bs.leText, `le="`+string(appendTextFloat(nil, b))+`"}`)
		bs.leOM = append(bs.leOM, `le="`+string(appendOMFloat(nil, b))+`"}`)
		if math.IsInf(b, +1) {
			bs.hasInf = true
		}
	}
	return bs
}

func updateExpHistogram(ser *series, isNew bool, dp pmetric.ExponentialHistogramDataPoint, temporality pmetric.AggregationTemporality) bool {
	set := func() {
		ser.start, ser.ts = dp.StartTimestamp(), dp.Timestamp()
		ser.count, ser.sum, ser.hasSum = dp.Count(), dp.Sum(), dp.HasSum()
		ser.scale, ser.zeroThresh = dp.Scale(), dp.ZeroThreshold()
		ser.population = dp.ZeroCount() + sumCounts(dp.Positive().BucketCounts()) + sumCounts(dp.Negative().BucketCounts())
	}
	if isNew {
		set()
		return true
	}
	switch temporality {
	case pmetric.AggregationTemporalityDelta:
		if dp.StartTimestamp() != ser.ts {
			if dp.StartTimestamp() <= ser.ts {
				return false
			}
			set()
			return true
		}
		// Merging buckets (downscaling to the smaller scale, widening the
		// zero bucket) moves counts between buckets but keeps their total,
		// and the text formats show only count and sum; so totals suffice.
		if dp.Timestamp() < ser.ts {
			ser.start = dp.StartTimestamp()
		} else {
			ser.ts = dp.Timestamp()
		}
		ser.scale = min(ser.scale, dp.Scale())
		ser.zeroThresh = max(ser.zeroThresh, dp.ZeroThreshold())
		ser.count += dp.Count()
		ser.population += dp.ZeroCount() + sumCounts(dp.Positive().BucketCounts()) + sumCounts(dp.Negative().BucketCounts())
		if ser.hasSum && dp.HasSum() {
			ser.sum += dp.Sum()
		} else {
			ser.hasSum, ser.sum = false, 0
		}
		return true
	case pmetric.AggregationTemporalityCumulative:
		if dp.Timestamp() < ser.ts {
			return false
		}
		set()
		return true
	}
	return false
}

func sumCounts(c pcommon.UInt64Slice) uint64 {
	var n uint64
	for i := 0; i < c.Len(); i++ {
		n += c.At(i)
	}
	return n
}

func updateSummary(ser *series, isNew bool, dp pmetric.SummaryDataPoint) bool {
	if !isNew && dp.Timestamp() < ser.ts {
		return false
	}
	ser.start, ser.ts = dp.StartTimestamp(), dp.Timestamp()
	ser.count, ser.sum = dp.Count(), dp.Sum()
	ser.quantiles = ser.quantiles[:0]
	qv := dp.QuantileValues()
	for i := 0; i < qv.Len(); i++ {
		q := quantile{qv.At(i).Quantile(), qv.At(i).Value()}
		// client_golang keeps them in a map: the last of equal quantiles wins.
		if j := slices.IndexFunc(ser.quantiles, func(e quantile) bool { return e.q == q.q }); j >= 0 {
			ser.quantiles[j] = q
			continue
		}
		ser.quantiles = append(ser.quantiles, q)
	}
	slices.SortFunc(ser.quantiles, func(a, b quantile) int {
		switch {
		case a.q < b.q:
			return -1
		case a.q > b.q:
			return 1
		}
		return 0
	})
	return true
}

// convertExemplars keeps what OpenMetrics shows of an exemplar: value,
// timestamp, trace and span id.
func convertExemplars(dst []exemplar, es pmetric.ExemplarSlice) []exemplar {
	for i := 0; i < es.Len(); i++ {
		e := es.At(i)
		var v float64
		switch e.ValueType() {
		case pmetric.ExemplarValueTypeDouble:
			v = e.DoubleValue()
		case pmetric.ExemplarValueTypeInt:
			v = float64(e.IntValue())
		}
		var pairs []labelPair
		if id := e.SpanID(); !id.IsEmpty() {
			pairs = append(pairs, labelPair{"span_id", hex.EncodeToString(id[:])})
		}
		if id := e.TraceID(); !id.IsEmpty() {
			pairs = append(pairs, labelPair{"trace_id", hex.EncodeToString(id[:])})
		}
		dst = append(dst, exemplar{value: v, ts: e.Timestamp(), labels: string(appendLabels(nil, pairs))})
	}
	return dst
}
