package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
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

// Value tags. Strings and bytes are a uvarint length then the bytes; ints and doubles 8 bytes
// little endian; maps a uvarint count then key/value pairs in map order; slices a count then
// values.
const (
	tagAbsent byte = iota
	tagEmpty
	tagStr
	tagInt
	tagDouble
	tagTrue
	tagFalse
	tagBytes
	tagMap
	tagSlice
)

// Span kinds and status codes outside the enum collapse into one "unknown" value, as they do in
// spanmetrics (whose key holds their string form, "" for all unknown values).
const unknownEnum = 0xff

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

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendStrValue(dst []byte, s string) []byte {
	return appendStr(append(dst, tagStr), s)
}

// appendIdentity appends the identity of a dimension value (see the key layout above) and
// returns the tag of its type. String forms are written in place, without allocating.
func appendIdentity(dst []byte, v pcommon.Value) ([]byte, byte) {
	// One type switch for the encoding and the tag: Value.Type is a switch on pdata's oneof,
	// a noticeable part of keying a span when asked twice per value (BenchmarkGlobDimensions).
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendStrValue(dst, v.Str()), tagStr
	case pcommon.ValueTypeInt:
		dst = append(dst, tagStr, 0)
		return setFormattedLen(strconv.AppendInt(dst, v.Int(), 10), len(dst)), tagInt
	case pcommon.ValueTypeDouble:
		dst = append(dst, tagStr, 0)
		return setFormattedLen(appendFloatAsString(dst, v.Double()), len(dst)), tagDouble
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return appendStrValue(dst, "true"), tagTrue
		}
		return appendStrValue(dst, "false"), tagFalse
	case pcommon.ValueTypeEmpty:
		return appendStrValue(dst, ""), tagEmpty
	default:
		return appendValue(dst, v), tagBytes // bytes, maps and slices: their own tagged encoding
	}
}

// typeTag returns the tag that records the type of a dimension value after the identity.
func typeTag(v pcommon.Value) byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return tagStr
	case pcommon.ValueTypeInt:
		return tagInt
	case pcommon.ValueTypeDouble:
		return tagDouble
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return tagTrue
		}
		return tagFalse
	case pcommon.ValueTypeEmpty:
		return tagEmpty
	}
	return tagBytes // unused: the identity carries the tag
}

// setFormattedLen writes the length of the string form formatted from at into the byte
// before it, reserved by the caller: the string forms of numbers are shorter than 128 bytes,
// so their uvarint length is that one byte, and the encoding equals appendStrValue's.
func setFormattedLen(dst []byte, at int) []byte {
	n := len(dst) - at
	if n >= 0x80 {
		panic("BUG: tracemetrics: a number's string form is 128 bytes or longer")
	}
	dst[at-1] = byte(n)
	return dst
}

// floatPrefix is what pcommon.Value.AsString writes before NaN and infinities.
const floatPrefix = "json: unsupported value: "

// appendFloatAsString appends pcommon.Value.AsString of a double (the ES6 number format of
// encoding/json, the errors for NaN and ±Inf included) without allocating.
func appendFloatAsString(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.AppendFloat(append(b, floatPrefix...), f, 'g', -1, 64)
	}
	fmtc := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		fmtc = 'e'
	}
	at := len(b)
	b = strconv.AppendFloat(b, f, fmtc, -1, 64)
	if fmtc == 'e' {
		// clean up e-09 to e-9
		if n := len(b) - at; n >= 4 && b[len(b)-4] == 'e' && b[len(b)-3] == '-' && b[len(b)-2] == '0' {
			b[len(b)-2] = b[len(b)-1]
			b = b[:len(b)-1]
		}
	}
	return b
}

// appendValue appends the tagged encoding of v.
func appendValue(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendStrValue(dst, v.Str())
	case pcommon.ValueTypeInt:
		return binary.LittleEndian.AppendUint64(append(dst, tagInt), uint64(v.Int()))
	case pcommon.ValueTypeDouble:
		return binary.LittleEndian.AppendUint64(append(dst, tagDouble), math.Float64bits(v.Double()))
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(dst, tagTrue)
		}
		return append(dst, tagFalse)
	case pcommon.ValueTypeBytes:
		b := v.Bytes()
		dst = binary.AppendUvarint(append(dst, tagBytes), uint64(b.Len()))
		for i := 0; i < b.Len(); i++ {
			dst = append(dst, b.At(i))
		}
		return dst
	case pcommon.ValueTypeMap:
		m := v.Map()
		dst = binary.AppendUvarint(append(dst, tagMap), uint64(m.Len()))
		for k, mv := range m.All() {
			dst = appendStr(dst, k)
			dst = appendValue(dst, mv)
		}
		return dst
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		dst = binary.AppendUvarint(append(dst, tagSlice), uint64(s.Len()))
		for i := 0; i < s.Len(); i++ {
			dst = appendValue(dst, s.At(i))
		}
		return dst
	default:
		return append(dst, tagEmpty)
	}
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
func (l *layout) putAttributes(key []byte, dst pcommon.Map, in *interner) {
	f := l.families[key[keyFamilyByte]&^overflowFlag]
	if isOverflowKey(key) {
		if isCapOverflowKey(key) {
			r := keyReader{b: key[keyHeaderLen:], intern: in}
			dst.EnsureCapacity(5)
			l.putBuiltins(&r, dst, false)
		}
		dst.PutBool(overflowKey, true)
		return
	}
	id, types := splitKey(key, f)
	r := keyReader{b: id[keyHeaderLen:], intern: in}
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

// keyReader decodes a key. Keys are produced by this package only; a malformed one is a bug.
// With an interner, decoded strings are shared between data points and flushes instead of
// being allocated for every attribute of every data point.
type keyReader struct {
	b      []byte
	intern *interner
}

func (r *keyReader) byte() byte {
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *keyReader) uvarint() int {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		panic("BUG: tracemetrics: malformed series key")
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *keyReader) str() string {
	n := r.uvarint()
	s := r.intern.get(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *keyReader) u64() uint64 {
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *keyReader) valueTagged(tag byte, dst pcommon.Value) {
	switch tag {
	case tagEmpty:
	case tagStr:
		dst.SetStr(r.str())
	case tagInt:
		dst.SetInt(int64(r.u64()))
	case tagDouble:
		dst.SetDouble(math.Float64frombits(r.u64()))
	case tagTrue:
		dst.SetBool(true)
	case tagFalse:
		dst.SetBool(false)
	case tagBytes:
		n := r.uvarint()
		dst.SetEmptyBytes().FromRaw(r.b[:n])
		r.b = r.b[n:]
	case tagMap:
		n := r.uvarint()
		m := dst.SetEmptyMap()
		m.EnsureCapacity(n)
		for i := 0; i < n; i++ {
			k := r.str()
			r.valueTagged(r.byte(), m.PutEmpty(k))
		}
	case tagSlice:
		n := r.uvarint()
		s := dst.SetEmptySlice()
		s.EnsureCapacity(n)
		for i := 0; i < n; i++ {
			r.valueTagged(r.byte(), s.AppendEmpty())
		}
	default:
		panic("BUG: tracemetrics: unknown value tag in series key")
	}
}

// stringForm reads a scalar's string form and sets dst to the value of type tag it came from.
// The string forms are exact (shortest round-trip digits), so the value is the one written.
func (r *keyReader) stringForm(tag byte, dst pcommon.Value) {
	switch tag {
	case tagStr:
		dst.SetStr(r.str())
		return
	case tagEmpty:
		r.uvarint() // always 0
		return
	}
	n := r.uvarint()
	s := string(r.b[:n]) // short, and only for numbers and bools
	r.b = r.b[n:]
	switch tag {
	case tagInt:
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			panic("BUG: tracemetrics: malformed int in series key")
		}
		dst.SetInt(v)
	case tagDouble:
		v, err := strconv.ParseFloat(strings.TrimPrefix(s, floatPrefix), 64)
		if err != nil {
			panic("BUG: tracemetrics: malformed double in series key")
		}
		dst.SetDouble(v)
	case tagTrue, tagFalse:
		dst.SetBool(tag == tagTrue)
	default:
		panic("BUG: tracemetrics: unknown value type in series key")
	}
}

var kindNames = [...]string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}

var statusNames = [...]string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"}

func kindName(b byte) string {
	if int(b) < len(kindNames) {
		return kindNames[b]
	}
	return ""
}

func statusName(b byte) string {
	if int(b) < len(statusNames) {
		return statusNames[b]
	}
	return ""
}

// interner deduplicates the strings the flusher decodes (service and span names, dimension
// values repeat across series and flushes). Looking a []byte up in a map[string]string does
// not allocate; the map is dropped when it grows past its bound, so hostile cardinality only
// costs what it would cost without it.
type interner struct {
	m     map[string]string
	limit int
}

// internLimit is how many distinct strings the flusher's interner keeps before it starts over.
const internLimit = 1 << 18

func newInterner(limit int) *interner { return &interner{m: map[string]string{}, limit: limit} }

func (in *interner) get(b []byte) string {
	if in == nil {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	if len(in.m) >= in.limit || len(b) > 256 {
		if len(b) > 256 {
			return string(b)
		}
		clear(in.m)
	}
	s := string(b)
	in.m[s] = s
	return s
}

// Resource identity: the (optionally filtered) resource attributes sorted by key, so that
// attribute order does not matter (spanmetrics hashes them the same way). The encoding is a
// uvarint count then key/value pairs.

type attr struct {
	k string
	v pcommon.Value
}

// attrSorter puts map attributes in key order for appendSorted. It remembers the key order of
// the last map it sorted and the permutation that sorted it: the resources of a request, and
// of the next one, usually come from SDKs that write their attributes in the same order, so
// most maps are ordered by checking their keys against that memo, one comparison per key,
// instead of comparing keys with each other.
type attrSorter struct {
	attrs    []attr
	perm     []int32 // perm[i]: input position of the i-th key in key order
	memoLens []int32 // key lengths of the memo, in input order
	memoKeys []byte  // key bytes of the memo, concatenated

	peakAttrs, peakKeys int // largest map and memo of the request (sizeHints)
}

func (as *attrSorter) footprint() int64 {
	return int64(cap(as.attrs))*int64(unsafe.Sizeof(attr{})) + int64(cap(as.perm)+cap(as.memoLens))*4 + int64(cap(as.memoKeys))
}

// appendSorted appends m's attributes accepted by keep (nil keeps all), sorted by key.
func (as *attrSorter) appendSorted(dst []byte, m pcommon.Map, keep map[string]struct{}) []byte {
	s := as.attrs[:0]
	for k, v := range m.All() {
		if keep != nil {
			if _, ok := keep[k]; !ok {
				continue
			}
		}
		s = append(s, attr{k: k, v: v})
	}
	if !as.memoMatches(s) {
		// Stable insertion sort of positions: resources have tens of attributes, and this runs
		// once per resource per batch, not per span.
		as.perm = as.perm[:0]
		as.memoLens = as.memoLens[:0]
		as.memoKeys = as.memoKeys[:0]
		for i := range s {
			j := len(as.perm)
			as.perm = append(as.perm, int32(i))
			for j > 0 && s[as.perm[j-1]].k > s[i].k {
				as.perm[j] = as.perm[j-1]
				j--
			}
			as.perm[j] = int32(i)
			as.memoLens = append(as.memoLens, int32(len(s[i].k)))
			as.memoKeys = append(as.memoKeys, s[i].k...)
		}
	}
	as.peakAttrs = max(as.peakAttrs, len(s))
	as.peakKeys = max(as.peakKeys, len(as.memoKeys))
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	for _, i := range as.perm {
		dst = appendStr(dst, s[i].k)
		dst = appendValue(dst, s[i].v)
	}
	clear(s) // do not keep the caller's attributes reachable from a pooled batch
	as.attrs = s[:0]
	return dst
}

// memoMatches reports whether s has the memo's keys in the memo's order.
func (as *attrSorter) memoMatches(s []attr) bool {
	if len(s) != len(as.memoLens) {
		return false
	}
	b := as.memoKeys
	for i := range s {
		n := int(as.memoLens[i])
		if n != len(s[i].k) || string(b[:n]) != s[i].k {
			return false
		}
		b = b[n:]
	}
	return true
}

// decodeMap decodes an attrSorter.appendSorted encoding into dst.
func decodeMap(b []byte, dst pcommon.Map) {
	r := keyReader{b: b}
	n := r.uvarint()
	dst.EnsureCapacity(n)
	for i := 0; i < n; i++ {
		k := r.str()
		r.valueTagged(r.byte(), dst.PutEmpty(k))
	}
}
