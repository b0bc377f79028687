package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

import "github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"

// AppendSortedWithout is AppendSorted that also leaves out the attributes in drop
// (target_info_excluded_dimensions; nil drops none). The reducer uses it for both the
// identity and the output attributes of a resource: an excluded attribute neither reaches
// target_info nor splits a resource in two, so two resources that differ only in excluded
// attributes are one, as in Tempo, where they share one target_info and one set of series.
func AppendSortedWithout[S traceview.Source](as *AttrSorter, dst []byte, m traceview.Attrs[S], keep, drop map[string]struct{}, enc *[]byte) []byte {
	if drop == nil {
		return AppendSorted(as, dst, m, keep, enc)
	}
	s := as.attrs[:0]
	for k, v := range m.All() {
		if keep != nil {
			if _, ok := keep[k]; !ok {
				continue
			}
		}
		if _, ok := drop[k]; ok {
			continue
		}
		s = append(s, attr{k: k})
		s[len(s)-1].v = v.Val(enc)
	}
	return as.appendSorted(dst, s)
}
