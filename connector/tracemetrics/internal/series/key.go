package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/dimglob"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Attribute names, as spanmetrics v0.165.1 writes them.
const (
	ServiceNameKey       = "service.name"
	SpanNameKey          = "span.name"
	SpanKindKey          = "span.kind"
	StatusCodeKey        = "status.code"
	CollectorInstanceKey = "collector.instance.id"
	OtelStatusCodeKey    = "otel.status_code"
	ScopeNameKey         = "span.instrumentation.scope.name"
	ScopeVersionKey      = "span.instrumentation.scope.version"
	OverflowKey          = "otel.metric.overflow"
	SamplingMethodKey    = "sampling.method"
	// StatusMessageKey is the span's status message (intrinsic_dimensions.status_message,
	// Tempo's status_message label once a Prometheus exporter has replaced the dot).
	StatusMessageKey = "status.message"
)

// A series key is the canonical, exact identity of a series:
//
//	resource key hash (8 bytes) | family index (1 byte) | built-in attributes | dimensions
//
// followed by the value types of the dimensions, one tag per dimension (see identity). In a
// family with glob dimensions (internal/reduce) the named dimensions are followed by the glob
// matches (a uvarint count, then each key as a string and its value as a dimension value),
// their type tags follow the named dimensions' tags, and the count ends the key again as 4
// bytes little endian, so that identity finds the tags without decoding the key.
// Built-in attributes are written only when not excluded: service name and span name as
// strings, span kind and status code as one byte each, then, when
// include_instrumentation_scope is set, a presence byte and the scope name and version, then,
// with intrinsic_dimensions.status_message, the status message as a string (after the scope,
// so that the cap overflow keys, which keep what precedes the scope, never hold it).
// Each dimension is tagAbsent or its value's identity: scalars (strings, ints, doubles,
// bools, empty) as tagStr and their string form (pcommon.Value.AsString), bytes, maps and
// slices as their tagged encoding (traceview). spanmetrics keys a series by the string form of each value,
// so an int 200 and a string "200" are one series there and must be one here; the type tags
// after the identity only remember the first span's types, which the output attributes keep
// (as spanmetrics keeps the first span's attributes).
//
// Overflow series have the family byte's high bit set. The one of aggregation_cardinality_limit
// (spanmetrics' overflow series, labelled otel.metric.overflow alone) is the header and nothing
// after it. Those of max_series and max_series_per_service keep the built-ins that error rates
// need: the header, then the service name, span kind and status code of the series' key, each
// when not excluded (the span name, the scope and the dimensions are what exploded, so they
// go); see appendCapOverflowKey.
//
// The series hash is deps.keyHash (hash/maphash, through internal/hash) over the identity;
// equal hashes are confirmed by comparing the identities, so a collision never merges two
// series.
const KeyHeaderLen = 9

// keyFamilyByte is the offset of the family byte; overflowFlag its high bit, set in the key of
// a resource's overflow series.
const (
	keyFamilyByte = 8
	overflowFlag  = 0x80
)

// Span kinds and status codes outside the enum collapse into one "unknown" value, as they do in
// spanmetrics (whose key holds their string form, "" for all unknown values).
const unknownEnum = 0xff

// A Family is a set of series sharing one attribute layout: the span Family (calls and
// duration together, the usual case), or calls and duration apart when calls_dimensions or
// histogram.dimensions differ, and the events Family. Each Family has its own series table.
type Family struct {
	Index    uint8
	Calls    bool // its count is emitted as the calls sum
	Duration bool // it observes span durations
	Events   bool // keyed and counted per span event
	Dims     []Dimension
	// Globs says which attribute keys the family's glob dimensions take (internal/dimglob),
	// learning the answers as keys come (the plan's other mutable part, lock-free); nil
	// without glob dimensions. The matches follow the named dimensions in the series key.
	Globs *dimglob.Answers
}

// Dimension is a named dimension of a family.
type Dimension struct {
	Name   string
	HasDef bool
	DefEnc []byte // encoded default value
	// SamplingMethod marks the sampling.method dimension (enable_metrics_sampling_method):
	// its value is not looked up but comes from how the span was weighted.
	SamplingMethod bool
	// Mapping, when not nil, makes this a dimension_mappings entry: its value joins the values
	// of several attributes (mapping.go).
	Mapping *Mapping
}

// MaxFamilies is the most families a layout has: calls, duration and events.
const MaxFamilies = 3

// Layout is the part of the configuration that decides the attributes of a series.
type Layout struct {
	WithService, WithName, WithKind, WithStatus bool
	WithStatusMessage                           bool // intrinsic_dimensions.status_message
	OtelStatusCode                              bool
	InstanceID                                  string // "" unless the collector.instance.id gate is on
	Scopes                                      []string
	Families                                    []*Family
	CallsFamily, DurationFamily, EventsFamily   int // -1 when absent
}

// SpanFamilies returns the families keyed once per span.
func (l *Layout) SpanFamilies() []*Family {
	var out []*Family
	for _, f := range l.Families {
		if !f.Events {
			out = append(out, f)
		}
	}
	return out
}

// GlobMatch is an attribute taken by a glob dimension: its key, and its value read with a
// buffer (a bytes, map or slice value carries its encoding).
type GlobMatch struct {
	Key   string
	Value traceview.Val
}

// KeyHead is what a span's series keys are made of besides their dimensions: the span's
// resource, service, name (as span_name renamed it), kind and status, and its scope.
type KeyHead struct {
	ResHash      uint64
	Service      string
	Name         string
	Kind         ptrace.SpanKind
	Status       ptrace.StatusCode
	WithScope    bool // the scope is one of include_instrumentation_scope's
	ScopeName    string
	ScopeVersion string
	Late         bool // counted apart, marked late (late_spans, late.go)
	// StatusMessage is the span's status message; read only with Layout.WithStatusMessage.
	StatusMessage string
}

// DimValue is a named dimension's value: Found is false when there is none. Value is read
// with a buffer (see GlobMatch).
type DimValue struct {
	Value traceview.Val
	Found bool
}

// Dims is where a span's named dimensions are looked up, in this order: the span's attributes,
// the event's (events family), the resource's values (read once per resource, one per named
// dimension of the family), the dimension's default. Bytes, maps and slices are encoded into
// *Enc. A sampling.method dimension's value says whether the span was weighted by an adjusted
// count (Extrapolated).
type Dims[S traceview.Source] struct {
	Span         traceview.Attrs[S]
	Event        *traceview.Attrs[S] // nil outside the events family
	Resource     []DimValue
	Enc          *[]byte
	Extrapolated bool
	// ResAttrs are the resource's attributes, for dimension_mappings' sources (mapping.go);
	// named dimensions take the resource's values from Resource.
	ResAttrs traceview.Attrs[S]
}

// lookup returns the value of the i-th named dimension d of a family.
func (ds *Dims[S]) lookup(i int, d *Dimension) (traceview.Val, bool) {
	if d.SamplingMethod {
		if ds.Extrapolated {
			return Extrapolated, true
		}
		return Counted, true
	}
	if d.Mapping != nil {
		return lookupMapping(ds, d.Mapping)
	}
	v, ok := ds.Span.GetVal(d.Name, ds.Enc)
	if !ok && ds.Event != nil {
		v, ok = ds.Event.GetVal(d.Name, ds.Enc)
	}
	if !ok {
		r := &ds.Resource[i]
		v, ok = r.Value, r.Found
	}
	return v, ok
}

// AppendKey appends the series key of a span in family f (the layout above): the built-ins of
// h, the values of f's named dimensions looked up in ds, and globs, the matches of the family's
// glob dimensions (sorted by key, each key once), nil in a family without. It is written for
// either source, and compiled for each (traceview).
func AppendKey[S traceview.Source](l *Layout, dst []byte, f *Family, h *KeyHead, ds *Dims[S], globs []GlobMatch) []byte {
	fam := f.Index
	if h.Late {
		fam |= lateFlag
	}
	dst = appendKeyHeader(dst, h.ResHash, fam)
	if l.WithService {
		dst = appendStr(dst, h.Service)
	}
	if l.WithName {
		dst = appendStr(dst, h.Name)
	}
	if l.WithKind {
		dst = append(dst, KindByte(h.Kind))
	}
	if l.WithStatus {
		dst = append(dst, StatusByte(h.Status))
	}
	if len(l.Scopes) > 0 {
		if h.WithScope {
			dst = append(dst, 1)
			dst = appendStr(dst, h.ScopeName)
			dst = appendStr(dst, h.ScopeVersion)
		} else {
			dst = append(dst, 0)
		}
	}
	if l.WithStatusMessage {
		dst = appendStr(dst, h.StatusMessage)
	}
	if len(f.Dims) == 0 && f.Globs == nil {
		return dst
	}
	// The type tags follow the identity (see the layout above); the first ones are kept on
	// the stack, the rest, if ever, looked up again.
	var types [16]byte
	for i := range f.Dims {
		typ := tagAbsent
		v, ok := ds.lookup(i, &f.Dims[i])
		switch {
		case ok && v.Type() == pcommon.ValueTypeStr: // the usual value, inline
			dst, typ = AppendStrValue(dst, v.Str()), tagStr
		case ok:
			dst, typ = appendIdentity(dst, v)
		case f.Dims[i].HasDef:
			dst, typ = append(dst, f.Dims[i].DefEnc...), tagStr
		default:
			dst = append(dst, tagAbsent)
		}
		if i < len(types) {
			types[i] = typ
		}
	}
	// The glob matches' types, as the named dimensions'.
	var globTypes [16]byte
	if f.Globs != nil {
		dst = binary.AppendUvarint(dst, uint64(len(globs)))
		for i := range globs {
			dst = appendStr(dst, globs[i].Key)
			var typ byte
			dst, typ = appendIdentity(dst, globs[i].Value)
			if i < len(globTypes) {
				globTypes[i] = typ
			}
		}
	}
	dst = append(dst, types[:min(len(f.Dims), len(types))]...)
	for i := len(types); i < len(f.Dims); i++ {
		v, ok := ds.lookup(i, &f.Dims[i])
		switch {
		case ok:
			dst = append(dst, typeTag(v))
		case f.Dims[i].HasDef:
			dst = append(dst, tagStr)
		default:
			dst = append(dst, tagAbsent)
		}
	}
	if f.Globs != nil {
		dst = append(dst, globTypes[:min(len(globs), len(globTypes))]...)
		for i := len(globTypes); i < len(globs); i++ {
			dst = append(dst, typeTag(globs[i].Value))
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(globs)))
	}
	return dst
}

// Extrapolated and Counted are the values of the sampling.method dimension
// (enable_metrics_sampling_method): whether a span was weighted by an adjusted count.
var (
	Extrapolated = traceview.StrVal("extrapolated")
	Counted      = traceview.StrVal("counted")
)

// AppendOverflowKey appends the key of the overflow series of family fam of the resource whose
// key hashes to resHash: the header alone, with overflowFlag set.
func AppendOverflowKey(dst []byte, resHash uint64, fam uint8) []byte {
	return appendKeyHeader(dst, resHash, fam|overflowFlag)
}

// IsOverflowKey reports whether key is the key of a resource's overflow series, of either kind.
func IsOverflowKey(key []byte) bool { return key[keyFamilyByte]&overflowFlag != 0 }

// IsCapOverflowKey reports whether overflow key okey is that of a max_series or
// max_series_per_service overflow series (the limit overflow series is the header alone).
func IsCapOverflowKey(okey []byte) bool { return len(okey) > KeyHeaderLen }

// A resource has one cap overflow series per family, span kind and status code: kinds and codes
// outside the enum share the last slot of each, as they share one output value.
const (
	KindSlots        = int(ptrace.SpanKindConsumer) + 2
	StatusSlots      = int(ptrace.StatusCodeError) + 2
	CapOverflowSlots = KindSlots * StatusSlots
)

// HasCapOverflow reports whether cap overflow series carry anything that tells them apart: with
// service.name, span.kind and status.code all excluded they would be labelled like the limit
// overflow series, and the connector uses that one instead.
func (l *Layout) HasCapOverflow() bool { return l.WithService || l.WithKind || l.WithStatus }

// AppendCapOverflowKey appends the key of the cap overflow series that takes the spans of the
// series whose key is key: its header with overflowFlag set, then its service name, span kind
// and status code as they are written in key (those the layout includes).
func (l *Layout) AppendCapOverflowKey(dst, key []byte) []byte {
	dst = append(dst, key[:KeyHeaderLen]...)
	// A late series over a cap goes to the cap's overflow series, late or not (late.go).
	dst[len(dst)-1] = dst[len(dst)-1]&^lateFlag | overflowFlag
	r := key[KeyHeaderLen:]
	if l.WithService {
		n := encodedStrLen(r)
		dst, r = append(dst, r[:n]...), r[n:]
	}
	if l.WithName {
		r = r[encodedStrLen(r):]
	}
	if l.WithKind {
		dst, r = append(dst, r[0]), r[1:]
	}
	if l.WithStatus {
		dst = append(dst, r[0])
	}
	return dst
}

// CapOverflowSlot returns the slot (span kind × status code) of the cap overflow series whose
// key is okey.
func (l *Layout) CapOverflowSlot(okey []byte) int { return l.kindStatusSlot(okey, false) }

// SeriesOverflowSlot returns the slot of the cap overflow series that takes the spans of the
// series whose key is key (capOverflowSlot of its appendCapOverflowKey, without building it).
func (l *Layout) SeriesOverflowSlot(key []byte) int { return l.kindStatusSlot(key, l.WithName) }

// kindStatusSlot returns the slot of the span kind and status code of key, in which a span
// name follows the service name when withName.
func (l *Layout) kindStatusSlot(key []byte, withName bool) int {
	r := key[KeyHeaderLen:]
	if l.WithService {
		r = r[encodedStrLen(r):]
	}
	if withName {
		r = r[encodedStrLen(r):]
	}
	kind, status := 0, 0
	if l.WithKind {
		kind, r = min(int(r[0]), KindSlots-1), r[1:]
	}
	if l.WithStatus {
		status = min(int(r[0]), StatusSlots-1)
		if l.OtelStatusCode && r[0] != byte(ptrace.StatusCodeOk) && r[0] != byte(ptrace.StatusCodeError) {
			status = 0 // no otel.status_code attribute: one series for unset and unknown codes
		}
	}
	return kind*StatusSlots + status
}

// encodedStrLen returns the length of the appendStr encoding at the start of b.
func encodedStrLen(b []byte) int {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		panic("BUG: tracemetrics: malformed series key")
	}
	return n + int(v)
}

func appendKeyHeader(dst []byte, resHash uint64, fam uint8) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, resHash)
	return append(dst, fam)
}

// KindByte is span kind k as a key stores it.
func KindByte(k ptrace.SpanKind) byte {
	if k < ptrace.SpanKindUnspecified || k > ptrace.SpanKindConsumer {
		return unknownEnum
	}
	return byte(k)
}

// StatusByte is status code c as a key stores it.
func StatusByte(c ptrace.StatusCode) byte {
	if c < ptrace.StatusCodeUnset || c > ptrace.StatusCodeError {
		return unknownEnum
	}
	return byte(c)
}

// Identity returns the part of a series key of family f that identifies the series: all of
// it but the type tags of the dimensions (and, with glob dimensions, the count after them).
func Identity(key []byte, f *Family) []byte {
	id, _ := splitKey(key, f)
	return id
}

// globCountLen is the length of the glob match count that ends the keys of a family with glob
// dimensions.
const globCountLen = 4

// splitKey splits a series key of family f into its identity and the type tags of its
// dimensions, named then glob (nil for an overflow key).
func splitKey(key []byte, f *Family) (id, tags []byte) {
	if IsOverflowKey(key) {
		return key, nil
	}
	if f.Globs == nil {
		n := len(key) - len(f.Dims)
		return key[:n], key[n:]
	}
	end := len(key) - globCountLen
	n := end - len(f.Dims) - int(binary.LittleEndian.Uint32(key[end:]))
	return key[:n], key[n:end]
}

// PutAttributes writes the data point attributes of a series key, in spanmetrics' order.
func (l *Layout) PutAttributes(key []byte, dst pcommon.Map, strs StringCache) {
	f := l.Families[key[keyFamilyByte]&^(overflowFlag|lateFlag)]
	if IsOverflowKey(key) {
		if IsCapOverflowKey(key) {
			r := keyReader{b: key[KeyHeaderLen:], strings: strs}
			dst.EnsureCapacity(5)
			l.putBuiltins(&r, dst, false)
		}
		dst.PutBool(OverflowKey, true)
		return
	}
	id, types := splitKey(key, f)
	r := keyReader{b: id[KeyHeaderLen:], strings: strs}
	dst.EnsureCapacity(6 + len(types))
	l.putBuiltins(&r, dst, l.WithName)
	if len(l.Scopes) > 0 && r.byte() == 1 {
		dst.PutStr(ScopeNameKey, r.str())
		if v := r.str(); v != "" {
			dst.PutStr(ScopeVersionKey, v)
		}
	}
	if IsLateKey(key) {
		dst.PutStr(LateKey, "true")
	}
	// An empty status message is no label, as Tempo leaves it out (its registry drops empty
	// label values); it stays a series of its own in the key.
	if l.WithStatusMessage {
		if m := r.str(); m != "" {
			dst.PutStr(StatusMessageKey, m)
		}
	}
	for i := range f.Dims {
		switch tag := r.byte(); tag {
		case tagAbsent:
		case tagStr:
			r.stringForm(types[i], dst.PutEmpty(f.Dims[i].Name))
		default:
			r.valueTagged(tag, dst.PutEmpty(f.Dims[i].Name))
		}
	}
	if f.Globs == nil {
		return
	}
	types = types[len(f.Dims):]
	for i := range r.uvarint() {
		k := r.str()
		if tag := r.byte(); tag == tagStr {
			r.stringForm(types[i], dst.PutEmpty(k))
		} else {
			r.valueTagged(tag, dst.PutEmpty(k))
		}
	}
}

// putBuiltins writes the built-in attributes read by r (the span name when withName) and the
// collector instance ID, in spanmetrics' order.
func (l *Layout) putBuiltins(r *keyReader, dst pcommon.Map, withName bool) {
	if l.WithService {
		dst.PutStr(ServiceNameKey, r.str())
	}
	if withName {
		dst.PutStr(SpanNameKey, r.str())
	}
	if l.WithKind {
		dst.PutStr(SpanKindKey, KindName(r.byte()))
	}
	if l.WithStatus {
		code := r.byte()
		switch {
		case !l.OtelStatusCode:
			dst.PutStr(StatusCodeKey, StatusName(code))
		case code == byte(ptrace.StatusCodeError):
			dst.PutStr(OtelStatusCodeKey, "ERROR")
		case code == byte(ptrace.StatusCodeOk):
			dst.PutStr(OtelStatusCodeKey, "OK")
		}
	}
	if l.InstanceID != "" {
		dst.PutStr(CollectorInstanceKey, l.InstanceID)
	}
}
