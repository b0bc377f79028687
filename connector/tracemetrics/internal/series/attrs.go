package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import (
	"encoding/binary"
	"unsafe"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Resource identity: the (optionally filtered) resource attributes sorted by key, so that
// attribute order does not matter (spanmetrics hashes them the same way). The encoding is a
// uvarint count then key/value pairs.

type attr struct {
	k string
	v traceview.Val
}

// AttrSorter puts map attributes in key order for appendSorted. It remembers the key order of
// the last map it sorted and the permutation that sorted it: the resources of a request, and
// of the next one, usually come from SDKs that write their attributes in the same order, so
// most maps are ordered by checking their keys against that memo, one comparison per key,
// instead of comparing keys with each other.
type AttrSorter struct {
	attrs    []attr
	perm     []int32 // perm[i]: input position of the i-th key in key order
	memoLens []int32 // key lengths of the memo, in input order
	memoKeys []byte  // key bytes of the memo, concatenated

	peakAttrs, peakKeys int // largest map and memo of the request (sizeHints)
}

func (as *AttrSorter) footprint() int64 {
	return int64(cap(as.attrs))*int64(unsafe.Sizeof(attr{})) + int64(cap(as.perm)+cap(as.memoLens))*4 + int64(cap(as.memoKeys))
}

// AppendSorted appends the attributes of m accepted by keep (nil keeps all), sorted by key,
// with as's memo. Bytes, maps and slices are encoded into *enc on the way (Value.Val).
func AppendSorted[S traceview.Source](as *AttrSorter, dst []byte, m traceview.Attrs[S], keep map[string]struct{}, enc *[]byte) []byte {
	s := as.attrs[:0]
	for k, v := range m.All() {
		if keep != nil {
			if _, ok := keep[k]; !ok {
				continue
			}
		}
		s = append(s, attr{k: k})
		s[len(s)-1].v = v.Val(enc) // in place: see the reducer's lookupDims
	}
	return as.appendSorted(dst, s)
}

// appendSorted appends s, the attributes AppendSorted collected, sorted by key.
func (as *AttrSorter) appendSorted(dst []byte, s []attr) []byte {
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
		dst = traceview.AppendTagged(dst, s[i].v)
	}
	clear(s) // do not keep the caller's attributes reachable from a pooled batch
	as.attrs = s[:0]
	return dst
}

// memoMatches reports whether s has the memo's keys in the memo's order.
func (as *AttrSorter) memoMatches(s []attr) bool {
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
