package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"encoding/binary"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// StringCache shares the strings a keyReader decodes between data points and flushes, instead
// of allocating one for every attribute of every data point (the flusher's stringCache).
type StringCache interface {
	Intern(b []byte) string
}

// keyReader decodes a key. Keys are produced by this package only; a malformed one is a bug.
type keyReader struct {
	b       []byte
	strings StringCache // nil: every string decoded is allocated
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
	var s string
	if r.strings != nil {
		s = r.strings.Intern(r.b[:n])
	} else {
		s = string(r.b[:n])
	}
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
		v, err := strconv.ParseFloat(s, 64) // NaN, Infinity and -Infinity included
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

// KindName is the span.kind value of a key's span kind byte.
func KindName(b byte) string {
	if int(b) < len(kindNames) {
		return kindNames[b]
	}
	return ""
}

// StatusName is the status.code value of a key's status code byte.
func StatusName(b byte) string {
	if int(b) < len(statusNames) {
		return statusNames[b]
	}
	return ""
}

// DecodeMap decodes an AttrSorter encoding into dst.
func DecodeMap(b []byte, dst pcommon.Map) {
	r := keyReader{b: b}
	n := r.uvarint()
	dst.EnsureCapacity(n)
	for i := 0; i < n; i++ {
		k := r.str()
		r.valueTagged(r.byte(), dst.PutEmpty(k))
	}
}
