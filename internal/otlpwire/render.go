package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

import (
	"bytes"
	"encoding/base64"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Rendering a value as pcommon.Value.AsString does (pdata v1.71.0), without building the
// map[string]any / []any that pdata's AsRaw builds for arrays and maps and hands to
// encoding/json (an Encoder with SetEscapeHTML(false), trailing newline trimmed). What that
// path does, and so what this file does:
//   - a map becomes a Go map: a repeated key keeps its last value, and encoding/json writes
//     the keys sorted by their bytes;
//   - an empty bytes value becomes a nil []byte, which JSON writes as null (a non-empty one
//     as a base64 string); an empty value is nil, null;
//   - a NaN or infinite double anywhere makes encoding/json fail, and AsString ignores the
//     error: the result is the empty string;
//   - strings are escaped as encoding/json escapes them (see appendJSONString).

// smallMap is how many map entries are sorted on the stack; a larger map allocates its list.
const smallMap = 16

func appendAsString(dst []byte, v Value) []byte {
	switch v.typ {
	case ValueTypeStr:
		return append(dst, v.payload()...)
	case ValueTypeBool:
		return strconv.AppendBool(dst, v.num != 0)
	case ValueTypeInt:
		return strconv.AppendInt(dst, int64(v.num), 10)
	case ValueTypeDouble:
		return AppendFloatString(dst, math.Float64frombits(v.num))
	case ValueTypeBytes:
		return base64.StdEncoding.AppendEncode(dst, v.payload())
	case ValueTypeSlice, ValueTypeMap:
		if out, ok := appendJSON(dst, v); ok {
			return out
		}
		return dst // what appendJSON wrote past len(dst) is discarded
	}
	return dst
}

// AppendFloatString appends a double as pcommon.Value.AsString renders it (pdata v1.71): NaN,
// Infinity and -Infinity spelled out, other values as appendES6Float writes them. Both the
// wire views and pdata's values render their doubles through it (package traceview).
func AppendFloatString(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	return appendES6Float(dst, f)
}

// appendES6Float formats a finite double as encoding/json and pcommon do: like %g but with
// the exponent used only below 1e-6 and from 1e21, and without padding the exponent.
func appendES6Float(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	at := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9 (within what this call wrote)
		if n := len(dst); n-at >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendJSON appends v as encoding/json writes its AsRaw form; ok is false where encoding/json
// fails (a NaN or infinite double), and dst is then to be discarded.
func appendJSON(dst []byte, v Value) ([]byte, bool) {
	switch v.typ {
	case ValueTypeEmpty:
		return append(dst, "null"...), true
	case ValueTypeStr:
		return appendJSONString(dst, v.payload()), true
	case ValueTypeBool:
		return strconv.AppendBool(dst, v.num != 0), true
	case ValueTypeInt:
		return strconv.AppendInt(dst, int64(v.num), 10), true
	case ValueTypeDouble:
		f := math.Float64frombits(v.num)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, false
		}
		return appendES6Float(dst, f), true
	case ValueTypeBytes:
		p := v.payload()
		if len(p) == 0 {
			return append(dst, "null"...), true
		}
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, p)
		return append(dst, '"'), true
	case ValueTypeSlice:
		dst = append(dst, '[')
		first := true
		for it := v.Slice().Iter(); it.Next(); {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			var ok bool
			if dst, ok = appendJSON(dst, it.Value()); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case ValueTypeMap:
		return appendJSONMap(dst, v.Map())
	}
	return dst, true
}

type mapEntry struct {
	key []byte
	val Value
}

func appendJSONMap(dst []byte, m Map) ([]byte, bool) {
	var small [smallMap]mapEntry
	entries := small[:0]
	for it := m.Iter(); it.Next(); {
		entries = append(entries, mapEntry{key: it.Key(), val: it.Value()})
	}
	// Stable, so that among equal keys the last one in wire order stays last: it is the one
	// a Go map keeps.
	slices.SortStableFunc(entries, func(a, b mapEntry) int { return bytes.Compare(a.key, b.key) })
	dst = append(dst, '{')
	first := true
	for i, e := range entries {
		if i+1 < len(entries) && bytes.Equal(e.key, entries[i+1].key) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, e.key)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendJSON(dst, e.val); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does without HTML escaping: \" \\ \b \f \n \r
// \t, other control bytes as \u00XX, each invalid UTF-8 byte as \ufffd, U+2028 and U+2029
// as \u2028 and \u2029, everything else as is.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
