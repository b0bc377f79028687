package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// The encoding of values in series keys and resource keys (key.go, attrs.go): traceview's
// tagged encoding (strings and bytes a uvarint length then the bytes, ints and doubles 8 bytes
// little endian, maps a uvarint count then key/value pairs in map order, slices a count then
// values), plus tagAbsent, which that encoding never writes, for a dimension without a value.
const (
	tagAbsent byte = 0
	tagEmpty       = traceview.TagEmpty
	tagStr         = traceview.TagStr
	tagInt         = traceview.TagInt
	tagDouble      = traceview.TagDouble
	tagTrue        = traceview.TagTrue
	tagFalse       = traceview.TagFalse
	tagBytes       = traceview.TagBytes
	tagMap         = traceview.TagMap
	tagSlice       = traceview.TagSlice
)

func appendStr(dst []byte, s string) []byte { return traceview.AppendStr(dst, s) }

// AppendStrValue appends the identity of string value s.
func AppendStrValue(dst []byte, s string) []byte {
	return appendStr(append(dst, tagStr), s)
}

// appendIdentity appends the identity of a dimension value (see the key layout above) and
// returns the tag of its type: scalars as tagStr and their string form (pcommon.Value.AsString,
// written in place, without allocating), bytes, maps and slices as their tagged encoding.
func appendIdentity(dst []byte, v traceview.Val) ([]byte, byte) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return AppendStrValue(dst, v.Str()), tagStr
	case pcommon.ValueTypeInt:
		dst = append(dst, tagStr, 0)
		return setFormattedLen(strconv.AppendInt(dst, v.Int(), 10), len(dst)), tagInt
	case pcommon.ValueTypeDouble:
		dst = append(dst, tagStr, 0)
		return setFormattedLen(otlpwire.AppendFloatString(dst, v.Double()), len(dst)), tagDouble
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return AppendStrValue(dst, "true"), tagTrue
		}
		return AppendStrValue(dst, "false"), tagFalse
	case pcommon.ValueTypeEmpty:
		return AppendStrValue(dst, ""), tagEmpty
	default:
		return traceview.AppendTagged(dst, v), tagBytes // bytes, maps and slices: their own tagged encoding
	}
}

// typeTag returns the tag that records the type of a dimension value after the identity.
func typeTag(v traceview.Val) byte {
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
