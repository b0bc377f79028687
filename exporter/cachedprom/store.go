package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"encoding/hex"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/internal/hash"
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

// family is one Prometheus metric family. name, help and typ never change,
// and a family id is never reused, so the renderer can hold an id across
// lock releases.
type family struct {
	name string
	help string
	typ  familyType
	rows []uint32 // its series, in no particular order
	dead bool     // emptied and forgotten by name
}

// seriesRow is the state of one exported series: a family and a label set.
// It holds no pointers, so the rows (in large chunks) cost the garbage
// collector nothing to scan. Histogram buckets live in the bucket arena,
// exponential histograms' state in its pointer-free slab (expslab.go); the
// rare kinds' extra state (summaries, exemplars, merged writers) lives in
// side maps keyed by row id.
type seriesRow struct {
	fam, lbl uint32
	pos      uint32 // index in the family's rows
	res      uint32 // resource id + 1, 0 for none
	bkt      uint32 // bucket arena offset
	nbkt     uint32 // number of OTLP buckets
	bounds   uint32 // boundSet id
	kind     seriesKind
	flags    uint8
	ident    uint64 // hash of the OTLP identity of the series' first writer
	ts       int64  // timestamp of the last point, unix nanoseconds
	seen     int64  // wall clock of the last update, unix nanoseconds
	value    float64
	count    uint64
	// start is the start time of what the series counts, unix nanoseconds
	// (0 unknown): the protobuf exposition's created timestamp of counters,
	// explicit histograms and summaries (see createdStart).
	start int64
}

const (
	rowUsed     uint8 = 1 << iota
	rowMerged         // cumulative writers are tracked one by one in merged
	rowOverflow       // the family's overflow series (max_series reached)
	rowWide           // bucket counts 64 bits wide (bucketwidth.go)
)

// rowChunk is the number of rows per chunk: rows never move, and growing
// the table never copies it.
const rowChunk = 1 << 14

// Reasons a data point was changed or not taken, counted in own telemetry.
type pointEvent uint8

const (
	eventOverflow      pointEvent = iota // folded into the family's overflow series
	eventMerged                          // added to a series another OTLP series also writes
	eventRepairedUTF8                    // label value with invalid UTF-8, replaced
	eventJoinedLabels                    // labels equal after sanitizing, values joined with ';'
	eventShadowedConst                   // const label yielding to the series' own label
	eventOutOfOrder                      // delta overlapping the previous one, or older point: dropped
	eventRefusedName                     // name the translator refuses: dropped
	eventRefusedType                     // family exists with another type: dropped
	eventRefusedLabel                    // invalid label name: dropped
	eventUnsupported                     // delta up-down counter, unspecified temporality, huge histogram: dropped
	numEvents
)

// eventNames are the reason attribute values of own telemetry.
var eventNames = [numEvents]string{
	"overflow", "merged", "invalid_utf8", "colliding_labels", "shadowed_const_label",
	"out_of_order", "invalid_name", "type_conflict", "invalid_label_name", "unsupported",
}

// seriesStore holds all series state. Ingest and the renderer's short
// per-chunk copies take mu; scrapes never do.
type seriesStore struct {
	mu        sync.Mutex
	cfg       *Config
	gates     gates // read once, when the store is built
	logger    *zap.Logger
	names     *namer
	constLbls []labelPair
	exemplars bool

	labels    *labelSets
	families  []family
	famByName map[string]uint32
	// A label set's first two rows (row + 1; 0 for none) are found through
	// setRows: a RED series' set has two, its calls counter and duration
	// histogram. Further rows of a set (a set shared by more families) are
	// in index, by family and label set (rowKey).
	setRows   [][2]uint32
	index     hash.Index
	live      int // rows in use
	chunks    []offHeapChunk[seriesRow]
	freeRows  []uint32
	rowCount  int
	buckets   bucketArena
	bounds    boundSets
	resources map[string]*resource
	resByID   []*resource // id - 1 → resource, nil when free

	// Side state of the rare kinds, keyed by row.
	// Exponential histograms' state is pointer-free, off the heap
	// (expslab.go): one slot per row in chunks mapped when first needed.
	expRows   []offHeapChunk[expRow]
	expBkts   expArena
	quantiles map[uint32][]quantile
	exs       map[uint32][]exemplar
	merged    map[uint64]*writerState // OTLP identity → last cumulative point

	overflowLbl uint32 // label set of overflow series, when held
	hasOverflow bool

	seed, seed2 maphash.Seed
	// scratch buffers, reused across data points
	key     []byte
	attrs   []labelPair
	pairs   []labelPair
	lblBuf  []byte
	lblEnds []int         // where each pair of lblBuf ends (renderPairs)
	bkts    []uint64      // a histogram row's counts while a point is applied
	expAdd  [2]expBuckets // a delta point's sides while added (addBuckets)

	events [numEvents]int64 // since the last takeEvents
	closed bool             // the off-heap memory is released: nothing is read or written
}

// resource is one job/instance pair, the source of a target_info series.
type resource struct {
	id     uint32
	key    string
	labels string
	refs   int
}

type quantile struct{ q, v float64 }

// exemplar is what the expositions show of an OTLP exemplar. The ids are
// kept as bytes and written as hex labels at render time: rendered at
// ingest, they were three allocations and about 80 bytes more per exemplar,
// and with native histograms' exemplars kept (5 per series from
// tracemetrics) that is per series.
type exemplar struct {
	value   float64
	ts      pcommon.Timestamp
	traceID pcommon.TraceID // zero when unset
	spanID  pcommon.SpanID  // zero when unset
}

// exemplarOf is what the store keeps of OTLP exemplar e of a point at pointTS: its value as a
// float, its ids, and its timestamp, the point's when it has none (Prometheus ignores native
// histogram exemplars without one).
func exemplarOf(e pmetric.Exemplar, pointTS pcommon.Timestamp) exemplar {
	var v float64
	switch e.ValueType() {
	case pmetric.ExemplarValueTypeDouble:
		v = e.DoubleValue()
	case pmetric.ExemplarValueTypeInt:
		v = float64(e.IntValue())
	}
	ts := e.Timestamp()
	if ts == 0 {
		ts = pointTS
	}
	return exemplar{value: v, ts: ts, traceID: e.TraceID(), spanID: e.SpanID()}
}

// hasLabels tells whether the exemplar has a trace or span id.
func (e *exemplar) hasLabels() bool { return !e.traceID.IsEmpty() || !e.spanID.IsEmpty() }

// appendLabels writes `span_id="..",trace_id=".."`, the ids that are set
// in name order, as appendLabels writes a label set (hex needs no escaping).
func (e *exemplar) appendLabels(dst []byte) []byte {
	if !e.spanID.IsEmpty() {
		dst = append(dst, `span_id="`...)
		dst = hex.AppendEncode(dst, e.spanID[:])
		dst = append(dst, '"')
	}
	if !e.traceID.IsEmpty() {
		if !e.spanID.IsEmpty() {
			dst = append(dst, ',')
		}
		dst = append(dst, `trace_id="`...)
		dst = hex.AppendEncode(dst, e.traceID[:])
		dst = append(dst, '"')
	}
	return dst
}

// expState is what an exponential histogram needs besides count and sum.
// The text formats show only those, but validity decides whether it is
// shown at all; the protobuf exposition shows the buckets too
// (expbuckets.go). It is the working form while a point is applied or a
// row copied: the store keeps it as an expRow (expslab.go).
type expState struct {
	scale      int32
	zeroThresh float64
	population uint64 // zero count plus all bucket counts
	hasSum     bool
	zeroCount  uint64
	start      int64 // start timestamp of the held state, unix nanoseconds
	pos, neg   expBuckets
}

// writerState is one OTLP series' last cumulative point, kept for the
// writers of a merged series so each contributes its increase once; of a
// delta writer, only the end of its last interval.
type writerState struct {
	row     uint32
	ts      int64
	value   float64 // number value, or histogram sum
	count   uint64
	buckets []uint64
	delta   bool // kept for the overlap check of deltas alone (freshDelta)
}

func newSeriesStore(cfg *Config, logger *zap.Logger) *seriesStore {
	g := readGates()
	s := &seriesStore{
		cfg:       cfg,
		gates:     g,
		logger:    logger,
		names:     newNamer(cfg, g),
		exemplars: cfg.EnableOpenMetrics,
		labels:    newLabelSets(),
		famByName: map[string]uint32{},
		resources: map[string]*resource{},
		quantiles: map[uint32][]quantile{},
		exs:       map[uint32][]exemplar{},
		merged:    map[uint64]*writerState{},
		seed:      maphash.MakeSeed(),
		seed2:     maphash.MakeSeed(),
	}
	s.bounds.init()
	for k, v := range cfg.ConstLabels {
		s.constLbls = append(s.constLbls, labelPair{name: k, value: v, origin: originConst})
	}
	return s
}

// identKey is a 128-bit hash of an OTLP identity less its metric's name
// and type: at 2^21 series the chance that two collide is below 2^-85.
type identKey [2]uint64

// rowKey is the hash under which the index holds the row of family fam
// and label set lbl (a 64-bit mix: the table takes its top bits).
func rowKey(fam, lbl uint32) uint64 {
	h := (uint64(fam)<<32 | uint64(lbl)) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// rowOf returns the row of family fam with label set lbl.
func (s *seriesStore) rowOf(fam, lbl uint32) (uint32, bool) {
	if int(lbl) < len(s.setRows) {
		for _, v := range s.setRows[lbl] {
			if v != 0 && s.row(v-1).fam == fam {
				return v - 1, true
			}
		}
	}
	p := s.index.Probe(rowKey(fam, lbl))
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		if r := s.row(id); r.fam == fam && r.lbl == lbl {
			return id, true
		}
	}
	return 0, false
}

// holdRow makes row id of family fam and label set lbl findable.
func (s *seriesStore) holdRow(fam, lbl, id uint32) {
	if int(lbl) >= len(s.setRows) {
		s.setRows = slices.Grow(s.setRows, int(lbl)+1-len(s.setRows))[:int(lbl)+1]
	}
	for i, v := range s.setRows[lbl] {
		if v == 0 {
			s.setRows[lbl][i] = id + 1
			return
		}
	}
	s.index.Insert(rowKey(fam, lbl), id)
}

// dropRow undoes holdRow.
func (s *seriesStore) dropRow(fam, lbl, id uint32) {
	for i, v := range s.setRows[lbl] {
		if v == id+1 {
			s.setRows[lbl][i] = 0
			return
		}
	}
	s.index.Delete(rowKey(fam, lbl), id)
}

func (s *seriesStore) row(id uint32) *seriesRow {
	return &s.chunks[id/rowChunk].values[id%rowChunk]
}

// scopeInfo is what a data point's identity and labels take from its scope
// and resource.
type scopeInfo struct {
	sig    []byte // identity part: scope name, version, schema url, sorted attributes, job, instance
	labels []labelPair
	res    *resource
	bad    bool // a scope label the translator refuses: every point is refused
}

// consume folds a batch into the store. It returns true when anything changed.
func (s *seriesStore) consume(md pmetric.Metrics, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
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
	b = appendAttrs(b, attrs)
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
			if reservedScopeAttr(a.name) {
				continue
			}
			ln, err := s.names.labelName("otel_scope_" + a.name)
			if err != nil {
				info.bad = true
			}
			info.labels = append(info.labels, labelPair{name: ln, value: a.value, origin: originScope})
		}
		info.labels = append(info.labels,
			labelPair{name: "otel_scope_name", value: sc.Name(), origin: originScope},
			labelPair{name: "otel_scope_version", value: sc.Version(), origin: originScope},
			labelPair{name: "otel_scope_schema_url", value: sm.SchemaUrl(), origin: originScope})
	}
	if hasJob {
		info.labels = append(info.labels, labelPair{name: model.JobLabel, value: job, origin: originScope})
	}
	if hasInst {
		info.labels = append(info.labels, labelPair{name: model.InstanceLabel, value: inst, origin: originScope})
	}
	return info
}

// reservedScopeAttr reports a scope attribute whose label would be one of
// otel_scope_name, otel_scope_version and otel_scope_schema_url, which the
// scope's own name, version and schema URL fill: the stock exporter leaves
// such attributes off the labels (they stay part of the series' identity).
func reservedScopeAttr(name string) bool {
	return name == "name" || name == "version" || name == "schema_url"
}

// sortedAttrs appends the attributes, values as strings, sorted by key, so
// that identity does not depend on insertion order. The value type is kept
// for the identity: int 200 and string "200" are two OTLP series.
func sortedAttrs(dst []labelPair, m pcommon.Map) []labelPair {
	dst = dst[:0]
	for k, v := range m.All() {
		var sv string
		if v.Type() == pcommon.ValueTypeStr {
			sv = v.Str()
		} else {
			sv = v.AsString()
		}
		dst = append(dst, labelPair{name: k, value: sv, typ: uint8(v.Type())})
	}
	if len(dst) > 1 {
		slices.SortFunc(dst, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	}
	return dst
}

// appendAttrs appends the identity form of sorted attributes.
func appendAttrs(b []byte, attrs []labelPair) []byte {
	for _, a := range attrs {
		b = append(b, a.name...)
		b = append(b, 0xfe, a.typ)
		b = append(b, a.value...)
		b = append(b, 0xff)
	}
	return b
}

// resource records the target_info labels of a job/instance pair; the last
// batch's attributes win.
func (s *seriesStore) resource(job, inst string, attrs pcommon.Map) *resource {
	key := job + "\xff" + inst
	r, ok := s.resources[key]
	if !ok {
		r = &resource{key: key}
		if i := slices.Index(s.resByID, nil); i >= 0 {
			r.id = uint32(i + 1)
			s.resByID[i] = r
		} else {
			s.resByID = append(s.resByID, r)
			r.id = uint32(len(s.resByID))
		}
		s.resources[key] = r
	}
	// Labels as the stock exporter builds them: every attribute but the three
	// mapped to job and instance (those too under the
	// KeepIdentifyingResourceAttributes gate), sanitised, values of colliding
	// names joined with ';', then job and instance.
	vals := map[string]string{}
	var order []string
	for k, v := range attrs.All() {
		switch k {
		case attrServiceName, attrServiceNamespace, attrServiceInstanceID:
			if !s.gates.keepIdentifyingResourceAttrs {
				continue
			}
		}
		name, err := s.names.labelName(k)
		if err != nil {
			s.events[eventRefusedLabel]++
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
	if !slices.Contains(order, model.JobLabel) {
		order = append(order, model.JobLabel)
	}
	if !slices.Contains(order, model.InstanceLabel) {
		order = append(order, model.InstanceLabel)
	}
	pairs := make([]labelPair, 0, len(order))
	for _, n := range order {
		pairs = append(pairs, labelPair{name: n, value: vals[n]})
	}
	slices.SortFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	pairs, ok = s.repairLabels(pairs)
	if !ok {
		return r
	}
	s.lblBuf = appendLabels(s.lblBuf[:0], pairs)
	if r.labels != string(s.lblBuf) {
		r.labels = string(s.lblBuf)
	}
	return r
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
		if sum.AggregationTemporality() == pmetric.AggregationTemporalityUnspecified ||
			// A delta up-down counter cannot be made cumulative without its
			// start value; the prometheus exporter refuses it too.
			(sum.AggregationTemporality() == pmetric.AggregationTemporalityDelta && !sum.IsMonotonic()) {
			s.events[eventUnsupported] += int64(sum.DataPoints().Len())
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
	if err != nil || sc.bad {
		s.events[eventRefusedName]++
		return false
	}
	fam, ok := s.famByName[name]
	if !ok {
		help := m.Description()
		if !utf8.ValidString(help) {
			// Prometheus refuses a scrape whose HELP is not UTF-8.
			help = strings.ToValidUTF8(help, "\uFFFD")
			s.events[eventRepairedUTF8]++
		}
		fam = uint32(len(s.families))
		s.families = append(s.families, family{name: name, help: help, typ: ftyp})
		s.famByName[name] = fam
	} else if s.families[fam].typ != ftyp {
		s.events[eventRefusedType]++
		s.logger.Debug("instrument type conflict, keeping the existing type", zap.String("metric", name))
		return false
	}
	p := pointCtx{s: s, m: m, fam: fam, kind: kind, sc: sc, now: now,
		nameHash: maphash.String(s.seed2, m.Name()) + uint64(m.Type())}

	switch kind {
	case kindNumber:
		var dps pmetric.NumberDataPointSlice
		if m.Type() == pmetric.MetricTypeGauge {
			dps = m.Gauge().DataPoints()
		} else {
			dps = m.Sum().DataPoints()
			p.delta = m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
			p.counter = m.Sum().IsMonotonic()
		}
		return addPoints(&p, dps, updateNumber)
	case kindHistogram:
		p.delta = m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		return addPoints(&p, m.Histogram().DataPoints(), updateHistogram)
	case kindExpHistogram:
		p.delta = m.ExponentialHistogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		return addPoints(&p, m.ExponentialHistogram().DataPoints(), updateExpHistogram)
	case kindSummary:
		return addPoints(&p, m.Summary().DataPoints(), updateSummary)
	}
	return false
}

// pointCtx is what the update of one data point needs to know about its
// metric and the series found for it.
type pointCtx struct {
	s       *seriesStore
	m       pmetric.Metric
	fam     uint32
	kind    seriesKind
	sc      *scopeInfo
	now     int64
	delta   bool
	counter bool // monotonic sum
	// nameHash is the hash of the metric's OTLP name and type: with the
	// identKey of a point's other parts it makes the point's ident.
	nameHash uint64

	id    uint32 // the row
	r     *seriesRow
	isNew bool
	ident uint64 // OTLP identity hash of the point
	// own: the point is the row's first writer and the row has no other
	// writers: it can be updated like the stock exporter updates a series.
	own bool
}

// addPoints finds or creates the series of every data point of dps and
// applies update to it; it reports whether any series changed.
func addPoints[P interface {
	Attributes() pcommon.Map
	Flags() pmetric.DataPointFlags
	Timestamp() pcommon.Timestamp
	StartTimestamp() pcommon.Timestamp
}, S interface {
	Len() int
	At(int) P
}](p *pointCtx, dps S, update func(p *pointCtx, dp P) bool) bool {
	changed := false
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		if !p.s.lookup(p, dp.Attributes(), dp.Flags()) {
			continue
		}
		if update(p, dp) {
			p.r.seen = p.now
			p.r.start = createdStart(p, p.r.start, int64(dp.StartTimestamp()))
			changed = true
		}
	}
	return changed
}

// createdStart returns a series' start time after a point starting at
// start was applied to it, as the stock exporter's accumulator keeps it: a
// point that replaces the series' state (its first, a cumulative point of
// its only writer, a summary's or an exponential histogram's last point)
// brings its own start; a point added to the state (a delta, the increase
// of one of several cumulative writers) keeps the earliest known start.
// The stock exporter starts a delta series over at a gap between deltas,
// which cachedprom adds instead (temporality.go), so the series keeps
// its first start there too.
func createdStart(p *pointCtx, held, start int64) int64 {
	replaces := p.isNew || !p.delta && (p.own || p.kind == kindSummary || p.kind == kindExpHistogram)
	if replaces || held == 0 {
		return start
	}
	if start != 0 {
		return min(held, start)
	}
	return held
}

// lookup finds or creates the series of a data point and fills p. It
// reports false when the point is not stored: no recorded value (the
// series is deleted, as the stock exporter does) or refused.
func (s *seriesStore) lookup(p *pointCtx, attrs pcommon.Map, flags pmetric.DataPointFlags) bool {
	s.attrs = sortedAttrs(s.attrs, attrs)
	k := append(s.key[:0], p.sc.sig...)
	k = appendAttrs(k, s.attrs)
	s.key = k
	ik := identKey{maphash.Bytes(s.seed, k), maphash.Bytes(s.seed2, k)}
	// The full identity adds the metric's name and type: the labels do not
	// depend on them, the series does.
	p.ident = maphash.Comparable(s.seed, [3]uint64{ik[0], ik[1], p.nameHash})
	if !flags.NoRecordedValue() {
		if lbl, ok := s.labels.cached(ik); ok {
			if id, ok := s.rowOf(p.fam, lbl); ok {
				s.found(p, id, false)
			} else {
				s.found(p, s.newRow(p, lbl, false), true)
			}
			return true
		}
	}

	if !s.renderLabels(p.sc) {
		return false
	}
	lbl, found := s.labels.find(s.lblBuf, s.lblEnds)
	overflow := false
	if !found && s.cfg.MaxSeries > 0 && s.labels.live()-s.overflowSets() >= s.cfg.MaxSeries && !flags.NoRecordedValue() {
		// Over the cap: the family's overflow series takes the point, so
		// totals stay exact while memory stays bounded.
		lbl, found, overflow = s.overflowLabels(), true, true
		s.events[eventOverflow]++
	}
	var id uint32
	var ok bool
	if found {
		id, ok = s.rowOf(p.fam, lbl)
	}
	if flags.NoRecordedValue() {
		if ok {
			s.remove(id)
		}
		return false
	}
	if !ok {
		if !found {
			lbl = s.labels.add(s.lblBuf, s.lblEnds)
		}
		id = s.newRow(p, lbl, overflow)
	}
	s.found(p, id, !ok)
	if !overflow {
		// Overflow points stay off the cache: the overflow set is not theirs.
		s.labels.remember(lbl, ik)
	}
	return true
}

// found fills p with the row id.
func (s *seriesStore) found(p *pointCtx, id uint32, isNew bool) {
	p.id, p.r, p.isNew = id, s.row(id), isNew
	p.own = p.r.flags&(rowMerged|rowOverflow) == 0 && p.r.ident == p.ident
	if !p.own && p.r.flags&rowOverflow == 0 {
		s.events[eventMerged]++
	}
}

// renderLabels renders the Prometheus labels of the point whose sorted
// attributes are in s.attrs into s.lblBuf; false when they are refused.
func (s *seriesStore) renderLabels(sc *scopeInfo) bool {
	pairs := s.pairs[:0]
	for _, a := range s.attrs {
		ln, err := s.names.labelName(a.name)
		if err != nil {
			s.events[eventRefusedLabel]++
			return false
		}
		pairs = append(pairs, labelPair{name: ln, value: a.value})
	}
	pairs = append(pairs, sc.labels...)
	pairs = append(pairs, s.constLbls...)
	// Stable: equal names keep the order attributes (by original name),
	// scope and resource labels, const labels, which decides collisions.
	slices.SortStableFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	s.pairs = pairs
	pairs, ok := s.repairLabels(pairs)
	if !ok {
		return false
	}
	s.renderPairs(pairs)
	return true
}

// renderPairs renders pairs into s.lblBuf as appendLabels does, and where
// each pair ends into s.lblEnds: the label sets store a set by its pairs.
func (s *seriesStore) renderPairs(pairs []labelPair) {
	b, ends := s.lblBuf[:0], s.lblEnds[:0]
	for i := range pairs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLabels(b, pairs[i:i+1])
		ends = append(ends, len(b))
	}
	s.lblBuf, s.lblEnds = b, ends
}

// repairLabels resolves what would make client_golang refuse a series, the
// same way whatever the arrival order: a value with invalid UTF-8 gets
// U+FFFD for the bad bytes; labels equal after sanitizing (http.method and
// http_method) get their values joined with ';' in the order of the
// original names, as the Prometheus translator joins resource attributes;
// a const label named like one of the series' own labels (job, instance)
// yields to it. Each repair is counted. An invalid label name refuses the
// series (false); no labels at all is a series like any other. pairs must be
// sorted stably by name.
func (s *seriesStore) repairLabels(pairs []labelPair) ([]labelPair, bool) {
	out := pairs[:0]
	for i := range pairs {
		p := pairs[i]
		if !model.UTF8Validation.IsValidLabelName(p.name) || strings.HasPrefix(p.name, model.ReservedLabelPrefix) {
			s.events[eventRefusedLabel]++
			return nil, false
		}
		if !utf8.ValidString(p.value) {
			p.value = strings.ToValidUTF8(p.value, "\uFFFD")
			s.events[eventRepairedUTF8]++
		}
		if n := len(out); n > 0 && out[n-1].name == p.name {
			prev := &out[n-1]
			switch {
			case p.origin == originConst:
				s.events[eventShadowedConst]++
			case prev.origin == originConst:
				*prev = p
				s.events[eventShadowedConst]++
			default:
				prev.value += ";" + p.value
				s.events[eventJoinedLabels]++
			}
			continue
		}
		out = append(out, p)
	}
	return out, true
}

// overflowSets is the number of label sets that are not counted by
// max_series.
func (s *seriesStore) overflowSets() int {
	if s.hasOverflow {
		return 1
	}
	return 0
}

// overflowLabels returns the label set of overflow series:
// otel_metric_overflow="true" and the const labels.
func (s *seriesStore) overflowLabels() uint32 {
	if s.hasOverflow {
		return s.overflowLbl
	}
	pairs := append(s.pairs[:0], labelPair{name: "otel_metric_overflow", value: "true"})
	for _, c := range s.constLbls {
		if c.name != "otel_metric_overflow" {
			pairs = append(pairs, c)
		}
	}
	slices.SortFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	s.renderPairs(pairs)
	id, ok := s.labels.find(s.lblBuf, s.lblEnds)
	if !ok {
		id = s.labels.add(s.lblBuf, s.lblEnds)
	}
	s.labels.ref(id) // held by the store itself until no overflow row is left
	s.overflowLbl, s.hasOverflow = id, true
	return id
}

// newRow creates the series of family p.fam with label set lbl.
func (s *seriesStore) newRow(p *pointCtx, lbl uint32, overflow bool) uint32 {
	var id uint32
	if n := len(s.freeRows); n > 0 {
		id = s.freeRows[n-1]
		s.freeRows = s.freeRows[:n-1]
	} else {
		id = uint32(s.rowCount)
		if id%rowChunk == 0 {
			s.chunks = append(s.chunks, newOffHeapChunk[seriesRow](rowChunk))
		}
		s.rowCount++
	}
	fam := &s.families[p.fam]
	r := s.row(id)
	*r = seriesRow{fam: p.fam, lbl: lbl, pos: uint32(len(fam.rows)), kind: p.kind, flags: rowUsed, ident: p.ident, seen: p.now}
	if overflow {
		r.flags |= rowOverflow
	} else if p.sc.res != nil {
		r.res = p.sc.res.id
		p.sc.res.refs++
	}
	fam.rows = append(fam.rows, id)
	s.labels.ref(lbl)
	s.holdRow(p.fam, lbl, id)
	s.live++
	return id
}

// remove deletes a row; the caller holds mu.
func (s *seriesStore) remove(id uint32) {
	r := s.row(id)
	s.dropRow(r.fam, r.lbl, id)
	s.live--
	fam := &s.families[r.fam]
	last := len(fam.rows) - 1
	moved := fam.rows[last]
	fam.rows[r.pos] = moved
	s.row(moved).pos = r.pos
	fam.rows = fam.rows[:last]
	if len(fam.rows) == 0 {
		// Forget the family; its id is not reused, so a render holding it
		// simply finds it empty.
		fam.dead, fam.rows = true, nil
		delete(s.famByName, fam.name)
	}
	s.labels.unref(r.lbl)
	if r.flags&rowOverflow != 0 && s.hasOverflow && s.labels.refs(s.overflowLbl) == 1 {
		s.labels.unref(s.overflowLbl)
		s.hasOverflow = false
	}
	if r.res != 0 {
		res := s.resByID[r.res-1]
		res.refs--
		if res.refs <= 0 {
			delete(s.resources, res.key)
			s.resByID[r.res-1] = nil
		}
	}
	s.freeBuckets(r)
	s.expFree(id)
	delete(s.quantiles, id)
	delete(s.exs, id)
	if r.flags&(rowMerged|rowOverflow) != 0 {
		for k, w := range s.merged {
			if w.row == id {
				delete(s.merged, k)
			}
		}
	}
	*r = seriesRow{}
	s.freeRows = append(s.freeRows, id)
}

// expire removes series not updated since before cutoff and returns how many
// it removed.
func (s *seriesStore) expire(cutoff time.Time) int {
	c := cutoff.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	n := 0
	for id := 0; id < s.rowCount; id++ {
		r := s.row(uint32(id))
		if r.flags&rowUsed != 0 && r.seen < c {
			s.remove(uint32(id))
			n++
		}
	}
	// A delta writer gone quiet (a graph gateway replaced by another with
	// its own identity) is forgotten while its series lives on: its state
	// only served to drop a retry of its last interval, and the writers of
	// a long-lived series would otherwise pile up with every restart.
	for k, w := range s.merged {
		if w.delta && w.ts < c {
			delete(s.merged, k)
		}
	}
	// A resource whose data points were all refused never got a series.
	for k, r := range s.resources {
		if r.refs <= 0 {
			delete(s.resources, k)
			s.resByID[r.id-1] = nil
		}
	}
	if n > 0 {
		s.compact()
	}
	return n
}

// compact gives memory back after a cardinality burst: label bytes and
// indexes are rebuilt when most of them are dead; trailing free row chunks
// are released.
func (s *seriesStore) compact() {
	s.labels.compact()
	s.index.Fit()
	if s.live == 0 {
		s.setRows = nil
		for i := range s.chunks {
			s.chunks[i].free()
		}
		s.chunks, s.freeRows, s.rowCount = nil, nil, 0
		s.buckets.release()
		s.expRelease()
		s.merged = map[uint64]*writerState{}
	}
}

// close releases the off-heap memory; the store is empty and inert
// afterwards, so a late call cannot touch unmapped memory.
func (s *seriesStore) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for i := range s.chunks {
		s.chunks[i].free()
	}
	s.chunks, s.rowCount, s.freeRows = nil, 0, nil
	s.buckets.release()
	s.expRelease()
	s.labels.release()
	for i := range s.families {
		s.families[i].rows, s.families[i].dead = nil, true
	}
	clear(s.famByName)
	s.index.Reset()
	s.setRows, s.live = nil, 0
	clear(s.resources)
}

func (s *seriesStore) takeEvents() [numEvents]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.events
	s.events = [numEvents]int64{}
	return ev
}

// liveRows returns the number of series rows in use.
func (s *seriesStore) liveRows() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

// labelSetCount returns the number of label sets held, the unit of max_series.
func (s *seriesStore) labelSetCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.labels.live()
}
