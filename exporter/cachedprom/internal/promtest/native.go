package promtest // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"

import (
	"fmt"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// NativeBucketMap expands one side's spans and deltas into index -> count,
// leaving out empty buckets.
func NativeBucketMap(spans []*dto.BucketSpan, deltas []int64) map[int64]int64 {
	out := map[int64]int64{}
	var idx, count int64
	d := 0
	for i, s := range spans {
		if i == 0 {
			idx = int64(s.GetOffset())
		} else {
			idx += int64(s.GetOffset())
		}
		for range s.GetLength() {
			count += deltas[d]
			d++
			if count != 0 {
				out[idx] = count
			}
			idx++
		}
	}
	return out
}

// ExemplarStrings describes exemplars as sorted "value@time{labels}"
// strings: the stock exporter writes exemplar labels in map order, and the
// order of a native histogram's exemplars means nothing.
func ExemplarStrings(exs []*dto.Exemplar) []string {
	var out []string
	for _, e := range exs {
		var lbls []string
		for _, l := range e.GetLabel() {
			lbls = append(lbls, l.GetName()+"="+l.GetValue())
		}
		slices.Sort(lbls)
		out = append(out, fmt.Sprintf("%g@%s{%s}", e.GetValue(), e.GetTimestamp().AsTime().Format(time.RFC3339Nano), strings.Join(lbls, ",")))
	}
	slices.Sort(out)
	return out
}
