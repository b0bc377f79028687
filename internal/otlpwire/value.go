package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

import "math"

// ValueType is the type of an attribute value, numbered as pcommon.ValueType so that
// pcommon.ValueType(t) converts.
type ValueType uint8

const (
	ValueTypeEmpty ValueType = iota
	ValueTypeStr
	ValueTypeInt
	ValueTypeDouble
	ValueTypeBool
	ValueTypeMap
	ValueTypeSlice
	ValueTypeBytes
)

var valueTypeNames = [...]string{"Empty", "Str", "Int", "Double", "Bool", "Map", "Slice", "Bytes"}

// String returns the name pcommon.ValueType.String gives the same type.
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return ""
}

// Value is a view of an attribute value in the request: a scalar, or a byte range of it. It
// is valid as long as the request's bytes are not modified (it does not depend on the
// Decoder, which may decode the next request meanwhile). The accessors return the zero value
// for another type, as pcommon.Value's do.
type Value struct {
	buf []byte
	typ ValueType
	num uint64 // see kvRec.num
}

func (v Value) Type() ValueType { return v.typ }

// Str returns the bytes of a string value, in the request (not a copy).
func (v Value) Str() []byte {
	if v.typ != ValueTypeStr {
		return nil
	}
	return v.payload()
}

// Bytes returns the bytes of a bytes value, in the request (not a copy).
func (v Value) Bytes() []byte {
	if v.typ != ValueTypeBytes {
		return nil
	}
	return v.payload()
}

func (v Value) Bool() bool { return v.typ == ValueTypeBool && v.num != 0 }

func (v Value) Int() int64 {
	if v.typ != ValueTypeInt {
		return 0
	}
	return int64(v.num)
}

func (v Value) Double() float64 {
	if v.typ != ValueTypeDouble {
		return 0
	}
	return math.Float64frombits(v.num)
}

// Slice returns the elements of an array value (empty for another type).
func (v Value) Slice() Slice {
	if v.typ != ValueTypeSlice {
		return Slice{}
	}
	return Slice{buf: v.buf, r: unpackRef(v.num)}
}

// Map returns the entries of a kvlist value (empty for another type).
func (v Value) Map() Map {
	if v.typ != ValueTypeMap {
		return Map{}
	}
	return Map{buf: v.buf, r: unpackRef(v.num)}
}

// AppendString appends the value as pcommon.Value.AsString renders it, byte for byte: a
// string as is, numbers and bools in Go's and JSON's notation, bytes in standard base64, an
// array or map as JSON (map keys sorted, a repeated key's last value kept, and nothing at
// all when a double inside is NaN or infinite, where encoding/json fails). It allocates
// nothing unless dst must grow, or a map holds more than smallMap entries.
func (v Value) AppendString(dst []byte) []byte { return appendAsString(dst, v) }

// AsString returns AppendString's rendering as a new string.
func (v Value) AsString() string { return string(v.AppendString(nil)) }

func (v Value) payload() []byte {
	r := unpackRef(v.num)
	return v.buf[r.off : r.off+r.n : r.off+r.n]
}

// Slice is a view of an array value's elements, read from the request as they are iterated.
type Slice struct {
	buf []byte
	r   ref
}

// Len counts the elements (a pass over the array's bytes).
func (s Slice) Len() int {
	n := 0
	for it := s.Iter(); it.Next(); {
		n++
	}
	return n
}

// Iter returns an iterator over the elements, in wire order.
func (s Slice) Iter() SliceIter {
	return SliceIter{b: s.buf[:s.r.off+s.r.n], pos: int(s.r.off)}
}

// SliceIter iterates over a Slice: for it := s.Iter(); it.Next(); { it.Value() }.
type SliceIter struct {
	b   []byte
	pos int
	cur Value
}

// Next moves to the next element and reports whether there is one.
func (it *SliceIter) Next() bool {
	s, e, ok := nextElement(it.b, it.pos)
	if !ok {
		it.pos = len(it.b)
		return false
	}
	typ, num, _ := resolveAnyValue(it.b[:e], s)
	it.cur, it.pos = Value{buf: it.b, typ: typ, num: num}, e
	return true
}

// Value returns the current element.
func (it *SliceIter) Value() Value { return it.cur }

// Map is a view of a kvlist value's entries, read from the request as they are iterated.
// Like pcommon.Map after unmarshalling, it keeps repeated keys, in wire order.
type Map struct {
	buf []byte
	r   ref
}

// Len counts the entries, repeated keys included (a pass over the map's bytes).
func (m Map) Len() int {
	n := 0
	for it := m.Iter(); it.Next(); {
		n++
	}
	return n
}

// Get returns the value of the first entry whose key is key, as pcommon.Map.Get does.
func (m Map) Get(key string) (Value, bool) {
	for it := m.Iter(); it.Next(); {
		if string(it.Key()) == key {
			return it.Value(), true
		}
	}
	return Value{}, false
}

// Iter returns an iterator over the entries, in wire order.
func (m Map) Iter() MapIter {
	return MapIter{b: m.buf[:m.r.off+m.r.n], pos: int(m.r.off)}
}

// MapIter iterates over a Map: for it := m.Iter(); it.Next(); { it.Key(); it.Value() }.
type MapIter struct {
	b   []byte
	pos int
	key ref
	cur Value
}

// Next moves to the next entry and reports whether there is one.
func (it *MapIter) Next() bool {
	s, e, ok := nextElement(it.b, it.pos)
	if !ok {
		it.pos = len(it.b)
		return false
	}
	key, typ, num := resolveKeyValue(it.b[:e], s)
	it.key, it.cur, it.pos = key, Value{buf: it.b, typ: typ, num: num}, e
	return true
}

// Key returns the current entry's key, in the request (not a copy).
func (it *MapIter) Key() []byte { return it.b[it.key.off : it.key.off+it.key.n : it.key.off+it.key.n] }

// Value returns the current entry's value.
func (it *MapIter) Value() Value { return it.cur }
