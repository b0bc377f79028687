package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"math"
	"slices"
	"strings"
)

// frame is a copy of at most frameRows series of one family, taken under the
// store lock; formatting happens after the lock is released. The renderer
// reads the store in place, a frame at a time, so ingest waits at most for
// one frame's copy, never for a whole render, and no copy of the whole
// store is ever held.
type frame struct {
	rows   []row
	labels []byte   // the rows' label sets
	counts []uint64 // cumulative bucket counts, quantile pairs, or exponential buckets
	exs    []exemplar
	nat    []nativeRow // exponential histograms' layout, copied for the protobuf body only
	raw    []uint64    // scratch: one row's bucket counts as stored
}

// nativeRow is what a native histogram needs besides count and sum; its
// buckets are in frame.counts, the positive side then the negative one.
type nativeRow struct {
	scale      int32
	zeroThresh float64
	zeroCount  uint64
	start      int64 // unix nanoseconds
	hasSum     bool
	posOffset  int32
	negOffset  int32
	nPos, nNeg int32
}

// frameRows bounds one lock hold of the renderer: a few hundred
// microseconds of copying.
const frameRows = 1024

// row is one series' values as the formatter needs them.
type row struct {
	lblOff, lblLen int
	kind           seriesKind
	value          float64 // number value, or sum
	count          uint64
	ts             int64 // milliseconds, when send_timestamps
	start          int64 // unix nanoseconds, 0 unknown: the created timestamp
	bounds         *boundSet
	counts         int32 // offset into frame.counts (histograms) or quantiles
	nCounts        int32
	exs            int32 // offset into frame.exs
	nExs           int32
	valid          bool  // false for a series the stock exporter would refuse to render
	nat            int32 // index into frame.nat, for native rows
}

// familyRef is what the renderer keeps of a family across frames.
type familyRef struct {
	id     uint32
	name   string
	help   string
	typ    familyType
	hidden bool // its sample names collide with another family's
}

// listFamilies returns the live families sorted by name, as client_golang's
// registry sorts them, so bodies are stable, and the target_info label sets.
//
// Two families can produce the same sample name: a gauge x_count beside a
// histogram x, or a metric named target_info beside the generated one.
// Prometheus would see duplicate samples, so the histogram, summary or
// generated target_info keeps the name whatever the arrival order and the
// other family is hidden; hidden counts its series.
func (s *seriesStore) listFamilies(fams []familyRef, targets []string) ([]familyRef, []string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.resources {
		if r.refs > 0 && r.labels != "" {
			targets = append(targets, r.labels)
		}
	}
	// Sorted so that equal content renders to equal bytes (and ETag).
	slices.Sort(targets)
	taken := map[string]bool{}
	if len(targets) > 0 {
		taken[s.names.targetInfoName()] = true
	}
	for id := range s.families {
		f := &s.families[id]
		if f.dead {
			continue
		}
		fams = append(fams, familyRef{id: uint32(id), name: f.name, help: f.help, typ: f.typ})
		if f.typ == typeHistogram || f.typ == typeSummary {
			taken[f.name+"_count"], taken[f.name+"_sum"] = true, true
			if f.typ == typeHistogram {
				taken[f.name+"_bucket"] = true
			}
		}
	}
	hidden := 0
	for i := range fams {
		f := &fams[i]
		if f.typ != typeHistogram && f.typ != typeSummary && taken[f.name] {
			f.hidden = true
			hidden += len(s.families[f.id].rows)
		}
	}
	slices.SortFunc(fams, func(a, b familyRef) int { return strings.Compare(a.name, b.name) })
	return fams, targets, hidden
}

// copyRows fills f with the rows of family fam from position from on, at
// most frameRows, and returns the position after them. f is empty when
// there is nothing left. native copies exponential histograms' buckets too,
// which only the protobuf body shows.
func (s *seriesStore) copyRows(f *frame, fam uint32, from int, withTimestamps, native bool) int {
	f.rows = f.rows[:0]
	f.labels = f.labels[:0]
	f.counts = f.counts[:0]
	f.exs = f.exs[:0]
	f.nat = f.nat[:0]

	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.families[fam].rows
	pos := from
	for ; pos < len(ids) && len(f.rows) < frameRows; pos++ {
		id := ids[pos]
		sr := s.row(id)
		r := row{lblOff: len(f.labels), kind: sr.kind, valid: true, start: sr.start}
		f.labels = s.labels.appendTo(f.labels, sr.lbl)
		r.lblLen = len(f.labels) - r.lblOff
		if withTimestamps {
			r.ts = sr.ts / 1e6
		}
		switch sr.kind {
		case kindNumber:
			r.value = sr.value
		case kindHistogram:
			r.value, r.count = sr.value, sr.count
			bs := s.bounds.sets[sr.bounds]
			r.bounds = bs
			r.counts = int32(len(f.counts))
			buckets := s.loadBuckets(f.raw[:0], sr)
			f.raw = buckets
			var cum uint64
			for _, idx := range bs.order {
				if idx < len(buckets) {
					cum += buckets[idx]
				}
				f.counts = append(f.counts, cum)
			}
			r.nCounts = int32(len(bs.order))
		case kindExpHistogram:
			var st expState
			if e := s.heldExpRow(id); e != nil {
				st = s.expLoad(e)
			}
			r.count = sr.count
			if st.hasSum {
				r.value = sr.value
			}
			// client_golang refuses these schemas and populations, and
			// the stock exporter a point without a sum.
			const customBucketsScale = -53
			r.valid = st.hasSum && st.scale != customBucketsScale && st.scale >= -4
			if math.IsNaN(r.value) {
				r.valid = r.valid && st.population <= sr.count
			} else {
				r.valid = r.valid && st.population == sr.count
			}
			if native {
				r.nat, r.counts = int32(len(f.nat)), int32(len(f.counts))
				f.nat = append(f.nat, nativeRow{
					scale: st.scale, zeroThresh: st.zeroThresh, zeroCount: st.zeroCount, start: st.start, hasSum: st.hasSum,
					posOffset: st.pos.offset, negOffset: st.neg.offset,
					nPos: int32(len(st.pos.counts)), nNeg: int32(len(st.neg.counts)),
				})
				f.counts = append(f.counts, st.pos.counts...)
				f.counts = append(f.counts, st.neg.counts...)
			}
		case kindSummary:
			r.value, r.count = sr.value, sr.count
			r.counts = int32(len(f.counts))
			qs := s.quantiles[id]
			for _, q := range qs {
				f.counts = append(f.counts, math.Float64bits(q.q), math.Float64bits(q.v))
			}
			r.nCounts = int32(len(qs))
		}
		if exs := s.exs[id]; len(exs) > 0 {
			r.exs = int32(len(f.exs))
			f.exs = append(f.exs, exs...)
			r.nExs = int32(len(exs))
		}
		f.rows = append(f.rows, r)
	}
	return pos
}
