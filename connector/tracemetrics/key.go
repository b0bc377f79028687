package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/dimglob"
)

// Attribute names, as spanmetrics v0.165.1 writes them.
const (
	serviceNameKey                 = "service.name"
	spanNameKey                    = "span.name"
	spanKindKey                    = "span.kind"
	statusCodeKey                  = "status.code"
	collectorInstanceKey           = "collector.instance.id"
	otelStatusCodeKey              = "otel.status_code"
	instrumentationScopeNameKey    = "span.instrumentation.scope.name"
	instrumentationScopeVersionKey = "span.instrumentation.scope.version"
	overflowKey                    = "otel.metric.overflow"
	samplingMethodKey              = "sampling.method"
)

// The values of sampling.method, encoded as string dimension values.
var (
	extrapolatedEnc = appendStrValue(nil, "extrapolated")
	countedEnc      = appendStrValue(nil, "counted")
)

// A series key is the canonical, exact identity of a series:
//
//	resource key hash (8 bytes) | family index (1 byte) | built-in attributes | dimensions
//
// followed by the value types of the dimensions, one tag per dimension (see identity). In a
// family with glob dimensions (globdims.go) the named dimensions are followed by the glob
// matches (a uvarint count, then each key as a string and its value as a dimension value),
// their type tags follow the named dimensions' tags, and the count ends the key again as 4
// bytes little endian, so that identity finds the tags without decoding the key.
// Built-in attributes are written only when not excluded: service name and span name as
// strings, span kind and status code as one byte each, then, when
// include_instrumentation_scope is set, a presence byte and the scope name and version.
// Each dimension is tagAbsent or its value's identity: scalars (strings, ints, doubles,
// bools, empty) as tagStr and their string form (pcommon.Value.AsString), bytes, maps and
// slices as their tagged encoding. spanmetrics keys a series by the string form of each value,
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
const keyHeaderLen = 9

// keyFamilyByte is the offset of the family byte; overflowFlag its high bit, set in the key of
// a resource's overflow series.
const (
	keyFamilyByte = 8
	overflowFlag  = 0x80
)

// Span kinds and status codes outside the enum collapse into one "unknown" value, as they do in
// spanmetrics (whose key holds their string form, "" for all unknown values).
const unknownEnum = 0xff

// A family is a set of series sharing one attribute layout: the span family (calls and
// duration together, the usual case), or calls and duration apart when calls_dimensions or
// histogram.dimensions differ, and the events family. Each family has its own series table.
type family struct {
	index    uint8
	calls    bool // its count is emitted as the calls sum
	duration bool // it observes span durations
	events   bool // keyed and counted per span event
	dims     []dimension
	// globs says which attribute keys the family's glob dimensions take (globdims.go),
	// learning the answers as keys come (the plan's other mutable part, lock-free); nil
	// without glob dimensions. The matches follow the named dimensions in the series key.
	globs *dimglob.Answers
}

type dimension struct {
	name   string
	hasDef bool
	defEnc []byte // encoded default value
	// samplingMethod marks the sampling.method dimension (enable_metrics_sampling_method):
	// its value is not looked up but comes from how the span was weighted.
	samplingMethod bool
}

const maxFamilies = 3

// layout is the part of the configuration that decides the attributes of a series.
type layout struct {
	withService, withName, withKind, withStatus bool
	otelStatusCode                              bool
	instanceID                                  string // "" unless the collector.instance.id gate is on
	scopes                                      []string
	families                                    []*family
	callsFamily, durationFamily, eventsFamily   int // -1 when absent
}

// spanFamilies returns the families keyed once per span.
func (l *layout) spanFamilies() []*family {
	var out []*family
	for _, f := range l.families {
		if !f.events {
			out = append(out, f)
		}
	}
	return out
}

// globMatch is an attribute taken by a glob dimension.
type globMatch struct {
	key string
	v   pcommon.Value
}

// appendKey appends the series key of span in family f (the layout above), under span name
// name (span.Name(), or as span_name renamed it). Dimensions are looked up on the span, then
// the event (events family), then the resource, then the default; sampling.method says whether
// the span was weighted by an adjusted count (extrapolated); globs are the matches of the
// family's glob dimensions (globScratch.collect), nil in a family without.
func (l *layout) appendKey(dst []byte, f *family, resHash uint64, svc, name string, span ptrace.Span, scope pcommon.InstrumentationScope, withScope bool, resAttrs pcommon.Map, evAttrs *pcommon.Map, extrapolated bool, globs []globMatch) []byte {
	dst = appendKeyHeader(dst, resHash, f.index)
	if l.withService {
		dst = appendStr(dst, svc)
	}
	if l.withName {
		dst = appendStr(dst, name)
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
	if len(f.dims) == 0 && f.globs == nil {
		return dst
	}
	spanAttrs := span.Attributes()
	// The type tags follow the identity (see the layout above); the first ones are kept on the stack,
	// the rest, if ever, looked up again.
	var types [16]byte
	for i := range f.dims {
		if f.dims[i].samplingMethod {
			enc := countedEnc
			if extrapolated {
				enc = extrapolatedEnc
			}
			dst = append(dst, enc...)
			if i < len(types) {
				types[i] = tagStr
			}
			continue
		}
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
	// The glob matches' types, as the named dimensions' (Value.Type is a type switch: it is
	// not asked twice).
	var globTypes [16]byte
	if f.globs != nil {
		dst = binary.AppendUvarint(dst, uint64(len(globs)))
		for i := range globs {
			dst = appendStr(dst, globs[i].key)
			var typ byte
			dst, typ = appendIdentity(dst, globs[i].v)
			if i < len(globTypes) {
				globTypes[i] = typ
			}
		}
	}
	dst = append(dst, types[:min(len(f.dims), len(types))]...)
	for i := len(types); i < len(f.dims); i++ {
		v, ok := dimensionValue(&f.dims[i], spanAttrs, evAttrs, resAttrs)
		switch {
		case f.dims[i].samplingMethod:
			dst = append(dst, tagStr)
		case ok:
			dst = append(dst, typeTag(v))
		case f.dims[i].hasDef:
			dst = append(dst, tagStr)
		default:
			dst = append(dst, tagAbsent)
		}
	}
	if f.globs != nil {
		dst = append(dst, globTypes[:min(len(globs), len(globTypes))]...)
		for i := len(globTypes); i < len(globs); i++ {
			dst = append(dst, typeTag(globs[i].v))
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(globs)))
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

// appendOverflowKey appends the key of the overflow series of family fam of the resource whose
// key hashes to resHash: the header alone, with overflowFlag set.
func appendOverflowKey(dst []byte, resHash uint64, fam uint8) []byte {
	return appendKeyHeader(dst, resHash, fam|overflowFlag)
}

// isOverflowKey reports whether key is the key of a resource's overflow series, of either kind.
func isOverflowKey(key []byte) bool { return key[keyFamilyByte]&overflowFlag != 0 }

// isCapOverflowKey reports whether overflow key okey is that of a max_series or
// max_series_per_service overflow series (the limit overflow series is the header alone).
func isCapOverflowKey(okey []byte) bool { return len(okey) > keyHeaderLen }

// A resource has one cap overflow series per family, span kind and status code: kinds and codes
// outside the enum share the last slot of each, as they share one output value.
const (
	kindSlots        = int(ptrace.SpanKindConsumer) + 2
	statusSlots      = int(ptrace.StatusCodeError) + 2
	capOverflowSlots = kindSlots * statusSlots
)

// hasCapOverflow reports whether cap overflow series carry anything that tells them apart: with
// service.name, span.kind and status.code all excluded they would be labelled like the limit
// overflow series, and the connector uses that one instead.
func (l *layout) hasCapOverflow() bool { return l.withService || l.withKind || l.withStatus }

// appendCapOverflowKey appends the key of the cap overflow series that takes the spans of the
// series whose key is key: its header with overflowFlag set, then its service name, span kind
// and status code as they are written in key (those the layout includes).
func (l *layout) appendCapOverflowKey(dst, key []byte) []byte {
	dst = append(dst, key[:keyHeaderLen]...)
	dst[len(dst)-1] |= overflowFlag
	r := key[keyHeaderLen:]
	if l.withService {
		n := encodedStrLen(r)
		dst, r = append(dst, r[:n]...), r[n:]
	}
	if l.withName {
		r = r[encodedStrLen(r):]
	}
	if l.withKind {
		dst, r = append(dst, r[0]), r[1:]
	}
	if l.withStatus {
		dst = append(dst, r[0])
	}
	return dst
}

// capOverflowSlot returns the slot (span kind × status code) of the cap overflow series whose
// key is okey.
func (l *layout) capOverflowSlot(okey []byte) int { return l.kindStatusSlot(okey, false) }

// seriesOverflowSlot returns the slot of the cap overflow series that takes the spans of the
// series whose key is key (capOverflowSlot of its appendCapOverflowKey, without building it).
func (l *layout) seriesOverflowSlot(key []byte) int { return l.kindStatusSlot(key, l.withName) }

// kindStatusSlot returns the slot of the span kind and status code of key, in which a span
// name follows the service name when withName.
func (l *layout) kindStatusSlot(key []byte, withName bool) int {
	r := key[keyHeaderLen:]
	if l.withService {
		r = r[encodedStrLen(r):]
	}
	if withName {
		r = r[encodedStrLen(r):]
	}
	kind, status := 0, 0
	if l.withKind {
		kind, r = min(int(r[0]), kindSlots-1), r[1:]
	}
	if l.withStatus {
		status = min(int(r[0]), statusSlots-1)
		if l.otelStatusCode && r[0] != byte(ptrace.StatusCodeOk) && r[0] != byte(ptrace.StatusCodeError) {
			status = 0 // no otel.status_code attribute: one series for unset and unknown codes
		}
	}
	return kind*statusSlots + status
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

func kindByte(k ptrace.SpanKind) byte {
	if k < ptrace.SpanKindUnspecified || k > ptrace.SpanKindConsumer {
		return unknownEnum
	}
	return byte(k)
}

func statusByte(c ptrace.StatusCode) byte {
	if c < ptrace.StatusCodeUnset || c > ptrace.StatusCodeError {
		return unknownEnum
	}
	return byte(c)
}

// identity returns the part of a series key of family f that identifies the series: all of
// it but the type tags of the dimensions (and, with glob dimensions, the count after them).
func identity(key []byte, f *family) []byte {
	id, _ := splitKey(key, f)
	return id
}

// globCountLen is the length of the glob match count that ends the keys of a family with glob
// dimensions.
const globCountLen = 4

// splitKey splits a series key of family f into its identity and the type tags of its
// dimensions, named then glob (nil for an overflow key).
func splitKey(key []byte, f *family) (id, tags []byte) {
	if isOverflowKey(key) {
		return key, nil
	}
	if f.globs == nil {
		n := len(key) - len(f.dims)
		return key[:n], key[n:]
	}
	end := len(key) - globCountLen
	n := end - len(f.dims) - int(binary.LittleEndian.Uint32(key[end:]))
	return key[:n], key[n:end]
}

// putAttributes writes the data point attributes of a series key, in spanmetrics' order.
func (l *layout) putAttributes(key []byte, dst pcommon.Map, strs StringCache) {
	f := l.families[key[keyFamilyByte]&^overflowFlag]
	if isOverflowKey(key) {
		if isCapOverflowKey(key) {
			r := keyReader{b: key[keyHeaderLen:], strings: strs}
			dst.EnsureCapacity(5)
			l.putBuiltins(&r, dst, false)
		}
		dst.PutBool(overflowKey, true)
		return
	}
	id, types := splitKey(key, f)
	r := keyReader{b: id[keyHeaderLen:], strings: strs}
	dst.EnsureCapacity(5 + len(types))
	l.putBuiltins(&r, dst, l.withName)
	if len(l.scopes) > 0 && r.byte() == 1 {
		dst.PutStr(instrumentationScopeNameKey, r.str())
		if v := r.str(); v != "" {
			dst.PutStr(instrumentationScopeVersionKey, v)
		}
	}
	for i := range f.dims {
		switch tag := r.byte(); tag {
		case tagAbsent:
		case tagStr:
			r.stringForm(types[i], dst.PutEmpty(f.dims[i].name))
		default:
			r.valueTagged(tag, dst.PutEmpty(f.dims[i].name))
		}
	}
	if f.globs == nil {
		return
	}
	types = types[len(f.dims):]
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
func (l *layout) putBuiltins(r *keyReader, dst pcommon.Map, withName bool) {
	if l.withService {
		dst.PutStr(serviceNameKey, r.str())
	}
	if withName {
		dst.PutStr(spanNameKey, r.str())
	}
	if l.withKind {
		dst.PutStr(spanKindKey, kindName(r.byte()))
	}
	if l.withStatus {
		code := r.byte()
		switch {
		case !l.otelStatusCode:
			dst.PutStr(statusCodeKey, statusName(code))
		case code == byte(ptrace.StatusCodeError):
			dst.PutStr(otelStatusCodeKey, "ERROR")
		case code == byte(ptrace.StatusCodeOk):
			dst.PutStr(otelStatusCodeKey, "OK")
		}
	}
	if l.instanceID != "" {
		dst.PutStr(collectorInstanceKey, l.instanceID)
	}
}
