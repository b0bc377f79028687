package store

import (
	"strconv"
	"strings"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"
)

// testOptions are the options the exporter's default configuration gives
// the store.
func testOptions() Options {
	return Options{Names: naming.New(naming.Options{WithSuffixes: true}), MaxSeries: 1_001_000}
}

// newTestStore returns a store of testOptions.
func newTestStore() *Store { return New(testOptions()) }

// sampleLines writes the samples of every number and explicit histogram
// series, read through the renderer's read API (Families, CopyRows), in the
// shape of the text format: `name{labels} value`, a histogram's buckets
// with their `le` (+Inf from its count unless a bound is +Inf), `_sum` and
// `_count`, values as strconv's shortest 'g' form. It is what the tests of
// the store check of the values it holds, without the renderer's formatting
// (its own tests check that).
func sampleLines(s *Store) string {
	var b strings.Builder
	line := func(name, suffix, labels, le string, v float64) {
		b.WriteString(name + suffix)
		if labels != "" || le != "" {
			b.WriteByte('{')
			b.WriteString(labels)
			if labels != "" && le != "" {
				b.WriteByte(',')
			}
			if le != "" {
				b.WriteString(`le="` + le + `"`)
			}
			b.WriteByte('}')
		}
		b.WriteString(" " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
	}
	var f Frame
	fams, _, _ := s.Families(nil, nil)
	for _, fam := range fams {
		for pos := 0; ; {
			pos = s.CopyRows(&f, fam.ID, pos, false, false)
			if len(f.Rows) == 0 {
				break
			}
			for i := range f.Rows {
				r := &f.Rows[i]
				labels := string(f.Labels(r))
				switch r.Kind {
				case KindNumber:
					line(fam.Name, "", labels, "", r.Value)
				case KindHistogram:
					for k, idx := range r.Bounds.Order {
						line(fam.Name, "_bucket", labels, strconv.FormatFloat(r.Bounds.Bounds[idx], 'g', -1, 64), float64(f.Buckets(r)[k]))
					}
					if !r.Bounds.HasInf {
						line(fam.Name, "_bucket", labels, "+Inf", float64(r.Count))
					}
					line(fam.Name, "_sum", labels, "", r.Value)
					line(fam.Name, "_count", labels, "", float64(r.Count))
				}
			}
		}
	}
	return b.String()
}
