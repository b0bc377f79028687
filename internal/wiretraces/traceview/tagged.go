package traceview // import "github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// The tags of the tagged encoding (package doc). 0 is never a tag.
const (
	TagEmpty byte = iota + 1
	TagStr
	TagInt
	TagDouble
	TagTrue
	TagFalse
	TagBytes
	TagMap
	TagSlice
)

// AppendTagged appends v's tagged encoding. A bytes, map or slice Val must have been read
// with a buffer (Value.Val with enc): its encoding is copied.
func AppendTagged(dst []byte, v Val) []byte {
	switch v.typ {
	case pcommon.ValueTypeStr:
		return AppendStr(append(dst, TagStr), v.str)
	case pcommon.ValueTypeInt:
		return binary.LittleEndian.AppendUint64(append(dst, TagInt), v.num)
	case pcommon.ValueTypeDouble:
		return binary.LittleEndian.AppendUint64(append(dst, TagDouble), v.num)
	case pcommon.ValueTypeBool:
		if v.num != 0 {
			return append(dst, TagTrue)
		}
		return append(dst, TagFalse)
	case pcommon.ValueTypeEmpty:
		return append(dst, TagEmpty)
	}
	if v.str == "" {
		panic("BUG: traceview: a bytes, map or slice value read without a buffer has no encoding to append")
	}
	return append(dst, v.str...)
}

// AppendStr appends s as the encoding writes strings: a uvarint length, then the bytes.
func AppendStr(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// appendTaggedPdata appends the tagged encoding of a pdata value.
func appendTaggedPdata(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeBytes:
		b := v.Bytes()
		dst = binary.AppendUvarint(append(dst, TagBytes), uint64(b.Len()))
		for i := range b.Len() {
			dst = append(dst, b.At(i))
		}
		return dst
	case pcommon.ValueTypeMap:
		m := v.Map()
		dst = binary.AppendUvarint(append(dst, TagMap), uint64(m.Len()))
		for k, e := range m.All() {
			dst = appendTaggedPdata(AppendStr(dst, k), e)
		}
		return dst
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		dst = binary.AppendUvarint(append(dst, TagSlice), uint64(s.Len()))
		for i := range s.Len() {
			dst = appendTaggedPdata(dst, s.At(i))
		}
		return dst
	}
	return AppendTagged(dst, pdataVal(v, nil))
}

// appendTaggedWire appends the tagged encoding of a wire value: the same bytes as
// appendTaggedPdata for the pdata of the same request.
func appendTaggedWire(dst []byte, v otlpwire.Value) []byte {
	switch v.Type() {
	case otlpwire.ValueTypeBytes:
		return append(binary.AppendUvarint(append(dst, TagBytes), uint64(len(v.Bytes()))), v.Bytes()...)
	case otlpwire.ValueTypeMap:
		m := v.Map()
		dst = binary.AppendUvarint(append(dst, TagMap), uint64(m.Len()))
		for it := m.Iter(); it.Next(); {
			dst = appendTaggedWire(AppendStr(dst, String(it.Key())), it.Value())
		}
		return dst
	case otlpwire.ValueTypeSlice:
		s := v.Slice()
		dst = binary.AppendUvarint(append(dst, TagSlice), uint64(s.Len()))
		for it := s.Iter(); it.Next(); {
			dst = appendTaggedWire(dst, it.Value())
		}
		return dst
	}
	return AppendTagged(dst, wireVal(v, nil))
}
