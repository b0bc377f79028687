package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"math"
	"slices"
	"strings"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"
)

// This file is what the renderer reads: the list of families and frames of
// their rows.

// Family is what the renderer keeps of a family across frames.
type Family struct {
	ID     uint32
	Name   string
	Help   string
	Type   FamilyType
	Hidden bool // its sample names collide with another family's
}

// listFamilies returns the live families sorted by name, as client_golang's
// registry sorts them, so bodies are stable, and the target_info label sets.
//
// Two families can produce the same sample name: a gauge x_count beside a
// histogram x, or a metric named target_info beside the generated one.
// Prometheus would see duplicate samples, so the histogram, summary or
// generated target_info keeps the name whatever the arrival order and the
// other family is hidden; hidden counts its series.
func listFamilies(t *tables, names *naming.Namer, fams []Family, targets []string) ([]Family, []string, int) {
	targets = t.resources.targets(targets)
	taken := map[string]bool{}
	if len(targets) > 0 {
		taken[names.TargetInfoName()] = true
	}
	for id := range t.families.list {
		f := &t.families.list[id]
		if f.dead {
			continue
		}
		fams = append(fams, Family{ID: uint32(id), Name: f.name, Help: f.help, Type: f.typ})
		if f.typ == TypeHistogram || f.typ == TypeSummary {
			taken[f.name+"_count"], taken[f.name+"_sum"] = true, true
			if f.typ == TypeHistogram {
				taken[f.name+"_bucket"] = true
			}
		}
	}
	hidden := 0
	for i := range fams {
		f := &fams[i]
		if f.Type != TypeHistogram && f.Type != TypeSummary && taken[f.Name] {
			f.Hidden = true
			hidden += len(t.families.list[f.ID].rows)
		}
	}
	slices.SortFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return fams, targets, hidden
}

// Frame is a copy of at most FrameRows series of one family, taken under the
// store lock; formatting happens after the lock is released. The renderer
// reads the store in place, a frame at a time, so ingest waits at most for
// one frame's copy, never for a whole render, and no copy of the whole
// store is ever held. The zero Frame is ready; one is reused frame after
// frame.
type Frame struct {
	Rows   []Row
	labels []byte     // the rows' label sets
	counts []uint64   // cumulative bucket counts, quantile pairs, or exponential buckets
	exs    []Exemplar // the rows' exemplars
	nat    []NativeRow
	raw    []uint64 // scratch: one row's bucket counts as stored
}

// NativeRow is what a native histogram needs besides count and sum; its
// buckets are in the frame (Frame.Native).
type NativeRow struct {
	Scale      int32
	ZeroThresh float64
	ZeroCount  uint64
	Start      int64 // unix nanoseconds
	HasSum     bool
	PosOffset  int32
	NegOffset  int32
	nPos, nNeg int32
}

// FrameRows is the most rows a frame holds. It bounds one lock hold of the
// renderer: a few hundred
// microseconds of copying.
const FrameRows = 1024

// Row is one series' values as the formatter needs them.
type Row struct {
	Kind   Kind
	Value  float64 // number value, or sum
	Count  uint64
	TS     int64     // milliseconds, when copied with timestamps
	Start  int64     // unix nanoseconds, 0 unknown: the created timestamp
	Bounds *BoundSet // an explicit histogram's bounds
	// Valid is false for a series the stock exporter would refuse to
	// render (an exponential histogram no exposition can show).
	Valid bool

	lblOff, lblLen int
	counts         int32 // offset into frame.counts (histograms) or quantiles
	nCounts        int32
	exs            int32 // offset into frame.exs
	nExs           int32
	nat            int32 // index into frame.nat, for native rows
}

// Labels returns the row's rendered label set (`a="x",b="y"`).
func (f *Frame) Labels(r *Row) []byte { return f.labels[r.lblOff : r.lblOff+r.lblLen] }

// LabelBytes returns the label sets of every row of the frame, each row's
// at its LabelOffset.
func (f *Frame) LabelBytes() []byte { return f.labels }

// LabelOffset is where the row's label set starts in the frame's
// LabelBytes.
func (r *Row) LabelOffset() int { return r.lblOff }

// Buckets returns an explicit histogram's cumulative counts, one per entry
// of its Bounds.Order.
func (f *Frame) Buckets(r *Row) []uint64 { return f.counts[r.counts : r.counts+r.nCounts] }

// Quantiles is the number of a summary's quantiles.
func (r *Row) Quantiles() int { return int(r.nCounts) }

// Quantile returns a summary's quantile i and its value, in increasing
// quantile order.
func (f *Frame) Quantile(r *Row, i int) (q, v float64) {
	at := int(r.counts) + 2*i
	return math.Float64frombits(f.counts[at]), math.Float64frombits(f.counts[at+1])
}

// Exemplars returns the row's exemplars, in the order they came.
func (f *Frame) Exemplars(r *Row) []Exemplar { return f.exs[r.exs : r.exs+r.nExs] }

// Native returns an exponential histogram's layout and its positive and
// negative bucket counts (OTLP buckets from PosOffset and NegOffset), for a
// frame copied with native.
func (f *Frame) Native(r *Row) (n *NativeRow, pos, neg []uint64) {
	n = &f.nat[r.nat]
	counts := f.counts[r.counts : r.counts+n.nPos+n.nNeg]
	return n, counts[:n.nPos], counts[n.nPos:]
}

// reset empties the frame, keeping its buffers.
func (f *Frame) reset() {
	f.Rows = f.Rows[:0]
	f.labels = f.labels[:0]
	f.counts = f.counts[:0]
	f.exs = f.exs[:0]
	f.nat = f.nat[:0]
}

// fill copies the rows of family fam from position from on, at most
// FrameRows, and returns the position after them. native copies
// exponential histograms' buckets too, which only the protobuf body and the
// classic fallback show.
func (f *Frame) fill(t *tables, fam uint32, from int, withTimestamps, native bool) int {
	ids := t.families.at(fam).rows
	pos := from
	for ; pos < len(ids) && len(f.Rows) < FrameRows; pos++ {
		id := ids[pos]
		sr := t.rows.at(id)
		r := Row{lblOff: len(f.labels), Kind: sr.kind, Valid: true, Start: sr.start}
		f.labels = t.labels.appendTo(f.labels, sr.lbl)
		r.lblLen = len(f.labels) - r.lblOff
		if withTimestamps {
			r.TS = sr.ts / 1e6
		}
		switch sr.kind {
		case KindNumber:
			r.Value = sr.value
		case KindHistogram:
			r.Value, r.Count = sr.value, sr.count
			bs := t.bounds.sets[sr.bounds]
			r.Bounds = bs
			r.counts = int32(len(f.counts))
			buckets := t.buckets.load(f.raw[:0], sr)
			f.raw = buckets
			var cum uint64
			for _, idx := range bs.Order {
				if idx < len(buckets) {
					cum += buckets[idx]
				}
				f.counts = append(f.counts, cum)
			}
			r.nCounts = int32(len(bs.Order))
		case KindExpHistogram:
			var st expState
			if e := t.exp.held(id); e != nil {
				st = t.exp.load(e)
			}
			r.Count = sr.count
			if st.hasSum {
				r.Value = sr.value
			}
			// client_golang refuses these schemas and populations, and
			// the stock exporter a point without a sum.
			const customBucketsScale = -53
			r.Valid = st.hasSum && st.scale != customBucketsScale && st.scale >= minScale
			if math.IsNaN(r.Value) {
				r.Valid = r.Valid && st.population <= sr.count
			} else {
				r.Valid = r.Valid && st.population == sr.count
			}
			if native {
				r.nat, r.counts = int32(len(f.nat)), int32(len(f.counts))
				f.nat = append(f.nat, NativeRow{
					Scale: st.scale, ZeroThresh: st.zeroThresh, ZeroCount: st.zeroCount, Start: st.start, HasSum: st.hasSum,
					PosOffset: st.pos.offset, NegOffset: st.neg.offset,
					nPos: int32(len(st.pos.counts)), nNeg: int32(len(st.neg.counts)),
				})
				f.counts = append(f.counts, st.pos.counts...)
				f.counts = append(f.counts, st.neg.counts...)
			}
		case KindSummary:
			r.Value, r.Count = sr.value, sr.count
			r.counts = int32(len(f.counts))
			qs := t.quantiles[id]
			for _, q := range qs {
				f.counts = append(f.counts, math.Float64bits(q.q), math.Float64bits(q.v))
			}
			r.nCounts = int32(len(qs))
		}
		if exs := t.exemplars[id]; len(exs) > 0 {
			r.exs = int32(len(f.exs))
			f.exs = append(f.exs, exs...)
			r.nExs = int32(len(exs))
		}
		f.Rows = append(f.Rows, r)
	}
	return pos
}
