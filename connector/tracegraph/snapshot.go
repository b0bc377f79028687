package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"slices"

	"github.com/lightstep/go-expohisto/structure"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/otelcol-red/otelcol-red/internal/exemplar"
)

// snapshot is one flush of the edge series: what the flusher builds the metrics from, copied by
// the aggregator at the flush tick. The two of the pipeline trade places (one filled by the
// aggregator while the flusher reads the other), so the aggregator spends on a flush only the
// copy of flat records, not the building of pmetric data (BenchmarkFlushHandoff: the consumer's
// share of a flush of 10,000 series), and the copy reuses the spare's memory: no allocation in
// a steady state with explicit buckets.
type snapshot struct {
	// start and now are the interval's timestamps.
	start, now pcommon.Timestamp
	live       int // series live
	series     []series
	keys       []uint32 // keyLen ids per series
	keyLen     int
	buckets    []uint64 // nh × nb per series: server, client, messaging
	nb, nh     int
	// expo holds copies of the exponential histograms, per series; nil in explicit mode.
	expo [][maxHistograms]*structure.Histogram[float64]
	// exemplars and exemplarN are the interval's exemplars (seriesTable has their layout).
	exemplars []exemplar.Exemplar
	exemplarN []uint8
	limit     int // exemplar slots per histogram
	// strs are the interned strings by id, as of the copy.
	strs []string
}

// take copies what a flush needs of t and ids: the records of every series, their keys and
// histograms, and the strings they refer to.
func (s *snapshot) take(t *seriesTable, ids *stringIDs, start, now pcommon.Timestamp) {
	s.start, s.now, s.live = start, now, t.live
	s.series = append(s.series[:0], t.series...)
	s.keys = append(s.keys[:0], t.keys...)
	s.keyLen, s.nb, s.nh = t.keyLen, t.nb, t.nh
	s.buckets = append(s.buckets[:0], t.buckets...)
	s.exemplars = append(s.exemplars[:0], t.exemplars...)
	s.exemplarN = append(s.exemplarN[:0], t.exemplarN...)
	s.limit = t.p.exemplars
	s.strs = append(s.strs[:0], ids.strs...)
	if t.expo == nil {
		return
	}
	// Histograms of earlier copies are kept and copied into again.
	if n := len(t.expo); cap(s.expo) < n {
		s.expo = slices.Grow(s.expo, n-len(s.expo))
	}
	s.expo = s.expo[:len(t.expo)]
	for id := range t.expo {
		if !t.series[id].live {
			continue
		}
		for which, src := range t.expo[id] {
			dst := s.expo[id][which]
			if src == nil {
				s.expo[id][which] = nil
				continue
			}
			if dst == nil {
				dst = new(structure.Histogram[float64])
				dst.Init(structure.NewConfig(structure.WithMaxSize(t.p.expoMaxSize)))
				s.expo[id][which] = dst
			}
			src.CopyInto(dst)
		}
	}
}

// key returns the interned key of series id.
func (s *snapshot) key(id uint32) []uint32 {
	return s.keys[int(id)*s.keyLen : int(id+1)*s.keyLen]
}

// bucketCounts returns the explicit bucket counts of series id's histogram which.
func (s *snapshot) bucketCounts(id uint32, which int) []uint64 {
	at := int(id)*s.nh*s.nb + which*s.nb
	return s.buckets[at : at+s.nb]
}

// exemplarsOf returns the interval's exemplars of series id's histogram which.
func (s *snapshot) exemplarsOf(id uint32, which int) []exemplar.Exemplar {
	if s.limit == 0 {
		return nil
	}
	at := int(id)*s.nh + which
	return s.exemplars[at*s.limit : at*s.limit+int(s.exemplarN[at])]
}

// str returns the string of id.
func (s *snapshot) str(id uint32) string { return s.strs[id] }
