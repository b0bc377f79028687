package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"encoding/binary"
	"slices"
)

// LabelOverflowValue is the value max_cardinality_per_label writes in place of the value of a
// dimension that has too many (internal/aggregate): Tempo's, so that queries written for
// Tempo's metrics generator find it. A span whose attribute has this very value counts in the
// same series, which is labelled alike.
const LabelOverflowValue = "__cardinality_overflow__"

// labelOverflowEnc is LabelOverflowValue's identity in a key.
var labelOverflowEnc = AppendStrValue(nil, LabelOverflowValue)

// LabelOverflowIdentity returns the identity LabelOverflowValue has in a key; not to be
// modified.
func LabelOverflowIdentity() []byte { return labelOverflowEnc }

// LimitedLabels returns the labels max_cardinality_per_label limits when it is set: the names
// of the families' named dimensions, each once, in the order they first come, but
// sampling.method (two values, written by the connector) and dimensions past the 64th of a
// family. The aggregator's limits and the telemetry's gauges both index them so.
func (p *Plan) LimitedLabels() []string {
	var names []string
	for _, f := range p.Families {
		for i, d := range f.Dims {
			if limitable(d, i) && !slices.Contains(names, d.Name) {
				names = append(names, d.Name)
			}
		}
	}
	return names
}

// LabelIndex returns the index in LimitedLabels of dimension d, the i-th of its family; -1
// when it is not limited.
func (p *Plan) LabelIndex(d Dimension, i int) int {
	if !limitable(d, i) {
		return -1
	}
	return slices.Index(p.LimitedLabels(), d.Name)
}

func limitable(d Dimension, i int) bool { return !d.SamplingMethod && i < 64 }

// DimensionSpans appends to dst, for each named dimension of family f, the offsets in key (a
// series key of f, not an overflow key) where the dimension's value identity starts and ends:
// two per dimension. An absent value is its one tagAbsent byte.
func (l *Layout) DimensionSpans(dst []int32, key []byte, f *Family) []int32 {
	pos := KeyHeaderLen
	if l.WithService {
		pos += encodedStrLen(key[pos:])
	}
	if l.WithName {
		pos += encodedStrLen(key[pos:])
	}
	if l.WithKind {
		pos++
	}
	if l.WithStatus {
		pos++
	}
	if len(l.Scopes) > 0 {
		pos++
		if key[pos-1] == 1 {
			pos += encodedStrLen(key[pos:])
			pos += encodedStrLen(key[pos:])
		}
	}
	for range f.Dims {
		end := pos + valueLen(key[pos:])
		dst = append(dst, int32(pos), int32(end))
		pos = end
	}
	return dst
}

// IsAbsent reports whether a value identity (a span of DimensionSpans) is the absent value.
func IsAbsent(v []byte) bool { return len(v) == 1 && v[0] == tagAbsent }

// ReplaceDimensions appends to dst series key key of family f, the identities of the named
// dimensions whose bit is set in which (dimension i: bit i) replaced by LabelOverflowValue's
// and their type tags by a string's; spans are key's DimensionSpans. The identity of the
// result is what a span with that value would have had.
func ReplaceDimensions(dst, key []byte, f *Family, spans []int32, which uint64) []byte {
	begin, at := len(dst), 0
	for i := range f.Dims {
		if i >= 64 || which&(1<<i) == 0 {
			continue
		}
		dst = append(dst, key[at:spans[2*i]]...)
		dst = append(dst, labelOverflowEnc...)
		at = int(spans[2*i+1])
	}
	dst = append(dst, key[at:]...)
	setStrTags(dst[begin:], f, which)
	return dst
}

// setStrTags sets, in series key k of family f, the type tags of the named dimensions whose
// bit is set in which to a string's.
func setStrTags(k []byte, f *Family, which uint64) {
	_, tags := splitKey(k, f)
	for i := range f.Dims {
		if i < 64 && which&(1<<i) != 0 {
			tags[i] = tagStr
		}
	}
}

// valueLen returns the length of the value identity (or tagged value) at the start of b.
func valueLen(b []byte) int {
	switch b[0] {
	case tagAbsent, tagEmpty, tagTrue, tagFalse:
		return 1
	case tagStr, tagBytes:
		return 1 + encodedStrLen(b[1:])
	case tagInt, tagDouble:
		return 9
	case tagMap:
		n, k := binary.Uvarint(b[1:])
		if k <= 0 {
			panic("BUG: tracemetrics: malformed series key")
		}
		pos := 1 + k
		for range n {
			pos += encodedStrLen(b[pos:])
			pos += valueLen(b[pos:])
		}
		return pos
	case tagSlice:
		n, k := binary.Uvarint(b[1:])
		if k <= 0 {
			panic("BUG: tracemetrics: malformed series key")
		}
		pos := 1 + k
		for range n {
			pos += valueLen(b[pos:])
		}
		return pos
	}
	panic("BUG: tracemetrics: unknown value tag in series key")
}
