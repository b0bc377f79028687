package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"encoding/binary"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// The encoding of values in series keys and resource keys (key.go, attrs.go).

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

func appendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendStrValue appends the identity of string value s.
func AppendStrValue(dst []byte, s string) []byte {
	return appendStr(append(dst, tagStr), s)
}

// appendIdentity appends the identity of a dimension value (see the key layout above) and
// returns the tag of its type. String forms are written in place, without allocating.
func appendIdentity(dst []byte, v pcommon.Value) ([]byte, byte) {
	// One type switch for the encoding and the tag: Value.Type is a switch on pdata's oneof,
	// a noticeable part of keying a span when asked twice per value (BenchmarkGlobDimensions).
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return AppendStrValue(dst, v.Str()), tagStr
	case pcommon.ValueTypeInt:
		dst = append(dst, tagStr, 0)
		return setFormattedLen(strconv.AppendInt(dst, v.Int(), 10), len(dst)), tagInt
	case pcommon.ValueTypeDouble:
		dst = append(dst, tagStr, 0)
		return setFormattedLen(appendFloatAsString(dst, v.Double()), len(dst)), tagDouble
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return AppendStrValue(dst, "true"), tagTrue
		}
		return AppendStrValue(dst, "false"), tagFalse
	case pcommon.ValueTypeEmpty:
		return AppendStrValue(dst, ""), tagEmpty
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
		return AppendStrValue(dst, v.Str())
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
