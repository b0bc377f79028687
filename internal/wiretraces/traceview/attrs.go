package traceview // import "github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"

import (
	"iter"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// Attrs is an attribute list (a resource's, a span's or an event's), valid until the cursor
// it came from moves. Like pcommon.Map after unmarshalling, and otlpwire.Attributes, it keeps
// repeated keys in wire order; look-ups find the first.
type Attrs[S Source] struct {
	pd pcommon.Map
	w  *otlpwire.Attributes
}

// Len returns the number of attributes, repeated keys included.
func (a Attrs[S]) Len() int {
	if IsWire[S]() {
		return a.w.Len()
	}
	return a.pd.Len()
}

// Get returns the value of the first attribute whose key is key.
func (a Attrs[S]) Get(key string) (Value[S], bool) {
	if IsWire[S]() {
		i := a.w.Index(key)
		return Value[S]{wa: a.w, wi: i}, i >= 0
	}
	v, ok := a.pd.Get(key)
	return Value[S]{pd: v}, ok
}

// GetVal is Get then Value.Val, in one call.
func (a Attrs[S]) GetVal(key string, enc *[]byte) (Val, bool) {
	if IsWire[S]() {
		i := a.w.Index(key)
		if i < 0 {
			return Val{}, false
		}
		_, v := a.w.At(i)
		return wireVal(v, enc), true
	}
	v, ok := a.pd.Get(key)
	if !ok {
		return Val{}, false
	}
	// Strings and ints, the usual attribute values, without the call pdataVal costs.
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return StrVal(v.Str()), true
	case pcommon.ValueTypeInt:
		return IntVal(v.Int()), true
	}
	return pdataVal(v, enc), true
}

// AppendString is Get then Value.AppendString, in one call; it appends nothing when key is
// absent.
func (a Attrs[S]) AppendString(dst []byte, key string) ([]byte, bool) {
	v, ok := a.Get(key)
	if !ok {
		return dst, false
	}
	return v.AppendString(dst), true
}

// All iterates over the attributes in order, repeated keys included. The key of the wire
// source points into the request (String). A loop over All compiles to the pdata or otlpwire
// loop itself; reading a value (Value.Val) is a call, so a loop that decides by the key first
// pays for the values it reads only.
func (a Attrs[S]) All() iter.Seq2[string, Value[S]] {
	return func(yield func(string, Value[S]) bool) {
		if IsWire[S]() {
			for i := range a.w.Len() {
				k, _ := a.w.At(i)
				if !yield(String(k), Value[S]{wa: a.w, wi: i}) {
					return
				}
			}
			return
		}
		for k, v := range a.pd.All() {
			if !yield(k, Value[S]{pd: v}) {
				return
			}
		}
	}
}

// Value is an attribute's value, valid as long as the Attrs it came from.
type Value[S Source] struct {
	pd pcommon.Value
	wa *otlpwire.Attributes
	wi int
}

// Val reads the value. A bytes, map or slice value is encoded into *enc (appended: see Val),
// or, with enc nil, read as its type alone.
func (v Value[S]) Val(enc *[]byte) Val {
	if IsWire[S]() {
		_, w := v.wa.At(v.wi)
		return wireVal(w, enc)
	}
	return pdataVal(v.pd, enc)
}

// AppendString appends the value as pcommon.Value.AsString renders it. Strings, ints, bools
// and doubles are appended without allocating from either source; the wire source renders
// bytes, maps and slices without allocating too (otlpwire.Value.AppendString), pdata through
// AsString.
func (v Value[S]) AppendString(dst []byte) []byte {
	if IsWire[S]() {
		_, w := v.wa.At(v.wi)
		return w.AppendString(dst)
	}
	switch v.pd.Type() {
	case pcommon.ValueTypeStr:
		return append(dst, v.pd.Str()...)
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(dst, v.pd.Int(), 10)
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(dst, v.pd.Bool())
	case pcommon.ValueTypeDouble:
		return otlpwire.AppendFloatString(dst, v.pd.Double())
	case pcommon.ValueTypeEmpty:
		return dst
	}
	return append(dst, v.pd.AsString()...)
}

// Val is a value read from either source (Value.Val): its type and, for a string, an int, a
// double or a bool, its payload. For bytes, a map or a slice it holds the value's tagged
// encoding when it was read with a buffer (Tagged), else its type alone. A string points where
// its source keeps it (the request, for the wire); an encoding points into the buffer, which
// must not be truncated and reused while the Val is.
type Val struct {
	typ pcommon.ValueType
	str string // a string's bytes, or a bytes, map or slice value's tagged encoding
	num uint64 // an int's two's complement, a double's bits, a bool's 0 or 1
}

// StrVal, IntVal, DoubleVal and BoolVal make a Val of a scalar.
func StrVal(s string) Val             { return Val{typ: pcommon.ValueTypeStr, str: s} }
func IntVal(i int64) Val              { return Val{typ: pcommon.ValueTypeInt, num: uint64(i)} }
func DoubleVal(f float64) Val         { return Val{typ: pcommon.ValueTypeDouble, num: math.Float64bits(f)} }
func BoolVal(b bool) Val              { return Val{typ: pcommon.ValueTypeBool, num: b2u(b)} }
func (v Val) Type() pcommon.ValueType { return v.typ }

// Str returns a string value; "" for another type, as pcommon.Value.Str.
func (v Val) Str() string {
	if v.typ != pcommon.ValueTypeStr {
		return ""
	}
	return v.str
}

// Int, Double and Bool return the value of their type; the zero value for another type.
func (v Val) Int() int64 {
	if v.typ != pcommon.ValueTypeInt {
		return 0
	}
	return int64(v.num)
}

func (v Val) Double() float64 {
	if v.typ != pcommon.ValueTypeDouble {
		return 0
	}
	return math.Float64frombits(v.num)
}

func (v Val) Bool() bool { return v.typ == pcommon.ValueTypeBool && v.num != 0 }

// Tagged returns the tagged encoding of a bytes, map or slice value read with a buffer; ""
// otherwise.
func (v Val) Tagged() string {
	switch v.typ {
	case pcommon.ValueTypeBytes, pcommon.ValueTypeMap, pcommon.ValueTypeSlice:
		return v.str
	}
	return ""
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// pdataVal reads a pdata value; encodes bytes, maps and slices into *enc when enc is not nil.
func pdataVal(v pcommon.Value, enc *[]byte) Val {
	switch t := v.Type(); t {
	case pcommon.ValueTypeStr:
		return StrVal(v.Str())
	case pcommon.ValueTypeInt:
		return IntVal(v.Int())
	case pcommon.ValueTypeDouble:
		return DoubleVal(v.Double())
	case pcommon.ValueTypeBool:
		return BoolVal(v.Bool())
	case pcommon.ValueTypeEmpty:
		return Val{}
	default:
		if enc == nil {
			return Val{typ: t}
		}
		off := len(*enc)
		*enc = appendTaggedPdata(*enc, v)
		return Val{typ: t, str: String((*enc)[off:])}
	}
}

// wireVal is pdataVal for a value of the wire source.
func wireVal(v otlpwire.Value, enc *[]byte) Val {
	t := pcommon.ValueType(v.Type())
	if t == pcommon.ValueTypeStr {
		return StrVal(String(v.Str()))
	}
	if t <= pcommon.ValueTypeBool { // empty, int, double, bool
		return Val{typ: t, num: uint64(v.Int()) | math.Float64bits(v.Double()) | b2u(v.Bool())}
	}
	if enc == nil {
		return Val{typ: t}
	}
	off := len(*enc)
	*enc = appendTaggedWire(*enc, v)
	return Val{typ: t, str: String((*enc)[off:])}
}
