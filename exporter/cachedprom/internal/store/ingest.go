package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"hash/maphash"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"
)

// ingest folds batches into the tables: it names each metric's family,
// finds or creates each data point's series (identity, labels, the
// max_series cap) and hands the point to temporality.go. It runs under the
// Store's lock and owns the scratch buffers a point needs.
type ingest struct {
	t                *tables
	names            *naming.Namer
	logger           *zap.Logger
	constLbls        []labelPair
	maxSeries        int
	withoutScopeInfo bool
	// keepIdentifying keeps service.name, service.namespace and
	// service.instance.id on target_info (the
	// pkg.prometheus.KeepIdentifyingResourceAttributes gate).
	keepIdentifying bool

	seed, seed2 maphash.Seed
	// scratch buffers, reused across data points
	key     []byte
	attrs   []labelPair
	pairs   []labelPair
	lblBuf  []byte
	lblEnds []int // where each pair of lblBuf ends (renderPairs)
}

// labelPair is one Prometheus label of a series. typ is the OTLP value type
// of an attribute (part of its identity); origin decides which label wins
// when two have the same name.
type labelPair struct {
	name, value string
	typ         uint8
	origin      uint8
}

// Label origins, in the order they win a name collision.
const (
	originAttr  uint8 = iota // data point attribute
	originScope              // scope, job and instance labels
	originConst              // const_labels: yields to the series' own labels
)

// appendLabels renders sorted pairs as `a="x",b="y"`.
func appendLabels(dst []byte, pairs []labelPair) []byte {
	for i, p := range pairs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = naming.AppendLabel(dst, p.name, p.value)
	}
	return dst
}

// scopeInfo is what a data point's identity and labels take from its scope
// and resource.
type scopeInfo struct {
	sig    []byte // identity part: scope name, version, schema url, sorted attributes, job, instance
	labels []labelPair
	res    *resource
	bad    bool // a scope label the translator refuses: every point is refused
}

// consume folds a batch into the tables. It returns true when anything
// changed.
func (in *ingest) consume(md pmetric.Metrics, nowNanos int64) bool {
	changed := false
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		resAttrs := rm.Resource().Attributes()
		job, hasJob := naming.Job(resAttrs)
		inst, hasInst := naming.Instance(resAttrs)
		var res *resource
		if hasJob && hasInst && job != "" && inst != "" {
			res = in.resource(job, inst, resAttrs)
		}
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			sm := sms.At(j)
			sc := in.scope(sm, job, hasJob, inst, hasInst, res)
			ms := sm.Metrics()
			for k := 0; k < ms.Len(); k++ {
				if in.addMetric(ms.At(k), &sc, nowNanos) {
					changed = true
				}
			}
		}
	}
	return changed
}

func (in *ingest) scope(sm pmetric.ScopeMetrics, job string, hasJob bool, inst string, hasInst bool, res *resource) scopeInfo {
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

	if !in.withoutScopeInfo {
		for _, a := range attrs {
			if reservedScopeAttr(a.name) {
				continue
			}
			ln, err := in.names.LabelName("otel_scope_" + a.name)
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
func (in *ingest) resource(job, inst string, attrs pcommon.Map) *resource {
	r := in.t.resources.upsert(job, inst)
	// Labels as the stock exporter builds them: every attribute but the three
	// mapped to job and instance (those too under the
	// KeepIdentifyingResourceAttributes gate), sanitised, values of colliding
	// names joined with ';', then job and instance.
	vals := map[string]string{}
	var order []string
	for k, v := range attrs.All() {
		switch k {
		case naming.AttrServiceName, naming.AttrServiceNamespace, naming.AttrServiceInstanceID:
			if !in.keepIdentifying {
				continue
			}
		}
		name, err := in.names.LabelName(k)
		if err != nil {
			in.t.events[EventRefusedLabel]++
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
	pairs, ok := in.repairLabels(pairs)
	if !ok {
		return r
	}
	in.lblBuf = appendLabels(in.lblBuf[:0], pairs)
	if r.labels != string(in.lblBuf) {
		r.labels = string(in.lblBuf)
	}
	return r
}

func (in *ingest) addMetric(m pmetric.Metric, sc *scopeInfo, now int64) bool {
	t := in.t
	var ftyp FamilyType
	var kind Kind
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		// The stock exporter means to expose gauges whose metadata says
		// prometheus.type=unknown as untyped, but its accumulator does not
		// copy metadata, so they come out as gauges. We match its output.
		ftyp, kind = TypeGauge, KindNumber
	case pmetric.MetricTypeSum:
		sum := m.Sum()
		if sum.AggregationTemporality() == pmetric.AggregationTemporalityUnspecified ||
			// A delta up-down counter cannot be made cumulative without its
			// start value; the prometheus exporter refuses it too.
			(sum.AggregationTemporality() == pmetric.AggregationTemporalityDelta && !sum.IsMonotonic()) {
			t.events[EventUnsupported] += int64(sum.DataPoints().Len())
			return false
		}
		ftyp, kind = TypeGauge, KindNumber
		if sum.IsMonotonic() {
			ftyp = TypeCounter
		}
	case pmetric.MetricTypeHistogram:
		ftyp, kind = TypeHistogram, KindHistogram
	case pmetric.MetricTypeExponentialHistogram:
		ftyp, kind = TypeHistogram, KindExpHistogram
	case pmetric.MetricTypeSummary:
		ftyp, kind = TypeSummary, KindSummary
	default:
		return false
	}
	name, err := in.names.MetricName(m)
	if err != nil || sc.bad {
		t.events[EventRefusedName]++
		return false
	}
	fam, ok := t.families.find(name)
	if !ok {
		help := m.Description()
		if !utf8.ValidString(help) {
			// Prometheus refuses a scrape whose HELP is not UTF-8.
			help = strings.ToValidUTF8(help, "\uFFFD")
			t.events[EventRepairedUTF8]++
		}
		fam = t.families.add(name, help, ftyp)
	} else if t.families.at(fam).typ != ftyp {
		t.events[EventRefusedType]++
		in.logger.Debug("instrument type conflict, keeping the existing type", zap.String("metric", name))
		return false
	}
	p := point{t: t, fam: fam, kind: kind, now: now,
		nameHash: maphash.String(in.seed2, m.Name()) + uint64(m.Type())}

	switch kind {
	case KindNumber:
		var dps pmetric.NumberDataPointSlice
		if m.Type() == pmetric.MetricTypeGauge {
			dps = m.Gauge().DataPoints()
		} else {
			dps = m.Sum().DataPoints()
			p.delta = m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
			p.counter = m.Sum().IsMonotonic()
		}
		return addPoints(in, &p, sc, dps, (*point).number)
	case KindHistogram:
		p.delta = m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		return addPoints(in, &p, sc, m.Histogram().DataPoints(), (*point).histogram)
	case KindExpHistogram:
		p.delta = m.ExponentialHistogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		return addPoints(in, &p, sc, m.ExponentialHistogram().DataPoints(), (*point).expHistogram)
	case KindSummary:
		return addPoints(in, &p, sc, m.Summary().DataPoints(), (*point).summary)
	}
	return false
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
}](in *ingest, p *point, sc *scopeInfo, dps S, update func(p *point, dp P) bool) bool {
	changed := false
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		if !in.lookup(p, sc, dp.Attributes(), dp.Flags()) {
			continue
		}
		if update(p, dp) {
			p.r.seen = p.now
			p.r.start = p.createdStart(p.r.start, int64(dp.StartTimestamp()))
			changed = true
		}
	}
	return changed
}

// lookup finds or creates the series of a data point and fills p. It
// reports false when the point is not stored: no recorded value (the
// series is deleted, as the stock exporter does) or refused.
func (in *ingest) lookup(p *point, sc *scopeInfo, attrs pcommon.Map, flags pmetric.DataPointFlags) bool {
	t := in.t
	in.attrs = sortedAttrs(in.attrs, attrs)
	k := append(in.key[:0], sc.sig...)
	k = appendAttrs(k, in.attrs)
	in.key = k
	ik := identKey{maphash.Bytes(in.seed, k), maphash.Bytes(in.seed2, k)}
	// The full identity adds the metric's name and type: the labels do not
	// depend on them, the series does.
	p.ident = maphash.Comparable(in.seed, [3]uint64{ik[0], ik[1], p.nameHash})
	if !flags.NoRecordedValue() {
		if lbl, ok := t.labels.cached(ik); ok {
			if id, ok := t.rows.find(p.fam, lbl); ok {
				in.found(p, id, false)
			} else {
				in.found(p, t.newRow(p.fam, lbl, p.kind, p.ident, p.now, sc.res, false), true)
			}
			return true
		}
	}

	if !in.renderLabels(sc) {
		return false
	}
	lbl, found := t.labels.find(in.lblBuf, in.lblEnds)
	overflow := false
	if !found && in.maxSeries > 0 && t.labels.live()-in.overflowSets() >= in.maxSeries && !flags.NoRecordedValue() {
		// Over the cap: the family's overflow series takes the point, so
		// totals stay exact while memory stays bounded.
		lbl, found, overflow = in.overflowLabels(), true, true
		t.events[EventOverflow]++
	}
	var id uint32
	var ok bool
	if found {
		id, ok = t.rows.find(p.fam, lbl)
	}
	if flags.NoRecordedValue() {
		if ok {
			t.remove(id)
		}
		return false
	}
	if !ok {
		if !found {
			lbl = t.labels.add(in.lblBuf, in.lblEnds)
		}
		id = t.newRow(p.fam, lbl, p.kind, p.ident, p.now, sc.res, overflow)
	}
	in.found(p, id, !ok)
	if !overflow {
		// Overflow points stay off the cache: the overflow set is not theirs.
		t.labels.remember(lbl, ik)
	}
	return true
}

// found fills p with the row id.
func (in *ingest) found(p *point, id uint32, isNew bool) {
	p.id, p.r, p.isNew = id, in.t.rows.at(id), isNew
	p.own = p.r.flags&(rowMerged|rowOverflow) == 0 && p.r.ident == p.ident
	if !p.own && p.r.flags&rowOverflow == 0 {
		in.t.events[EventMerged]++
	}
}

// renderLabels renders the Prometheus labels of the point whose sorted
// attributes are in in.attrs into in.lblBuf; false when they are refused.
func (in *ingest) renderLabels(sc *scopeInfo) bool {
	pairs := in.pairs[:0]
	for _, a := range in.attrs {
		ln, err := in.names.LabelName(a.name)
		if err != nil {
			in.t.events[EventRefusedLabel]++
			return false
		}
		pairs = append(pairs, labelPair{name: ln, value: a.value})
	}
	pairs = append(pairs, sc.labels...)
	pairs = append(pairs, in.constLbls...)
	// Stable: equal names keep the order attributes (by original name),
	// scope and resource labels, const labels, which decides collisions.
	slices.SortStableFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	in.pairs = pairs
	pairs, ok := in.repairLabels(pairs)
	if !ok {
		return false
	}
	in.renderPairs(pairs)
	return true
}

// renderPairs renders pairs into in.lblBuf as appendLabels does, and where
// each pair ends into in.lblEnds: the label sets store a set by its pairs.
func (in *ingest) renderPairs(pairs []labelPair) {
	b, ends := in.lblBuf[:0], in.lblEnds[:0]
	for i := range pairs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLabels(b, pairs[i:i+1])
		ends = append(ends, len(b))
	}
	in.lblBuf, in.lblEnds = b, ends
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
func (in *ingest) repairLabels(pairs []labelPair) ([]labelPair, bool) {
	events := &in.t.events
	out := pairs[:0]
	for i := range pairs {
		p := pairs[i]
		if !model.UTF8Validation.IsValidLabelName(p.name) || strings.HasPrefix(p.name, model.ReservedLabelPrefix) {
			events[EventRefusedLabel]++
			return nil, false
		}
		if !utf8.ValidString(p.value) {
			p.value = strings.ToValidUTF8(p.value, "\uFFFD")
			events[EventRepairedUTF8]++
		}
		if n := len(out); n > 0 && out[n-1].name == p.name {
			prev := &out[n-1]
			switch {
			case p.origin == originConst:
				events[EventShadowedConst]++
			case prev.origin == originConst:
				*prev = p
				events[EventShadowedConst]++
			default:
				prev.value += ";" + p.value
				events[EventJoinedLabels]++
			}
			continue
		}
		out = append(out, p)
	}
	return out, true
}

// overflowSets is the number of label sets that are not counted by
// max_series.
func (in *ingest) overflowSets() int {
	if in.t.hasOverflow {
		return 1
	}
	return 0
}

// overflowLabels returns the label set of overflow series:
// otel_metric_overflow="true" and the const labels.
func (in *ingest) overflowLabels() uint32 {
	t := in.t
	if t.hasOverflow {
		return t.overflowLbl
	}
	pairs := append(in.pairs[:0], labelPair{name: "otel_metric_overflow", value: "true"})
	for _, c := range in.constLbls {
		if c.name != "otel_metric_overflow" {
			pairs = append(pairs, c)
		}
	}
	slices.SortFunc(pairs, func(a, b labelPair) int { return strings.Compare(a.name, b.name) })
	in.renderPairs(pairs)
	id, ok := t.labels.find(in.lblBuf, in.lblEnds)
	if !ok {
		id = t.labels.add(in.lblBuf, in.lblEnds)
	}
	t.labels.ref(id) // held by the store itself until no overflow row is left
	t.overflowLbl, t.hasOverflow = id, true
	return id
}
