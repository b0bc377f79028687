package render // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"

import (
	"encoding/hex"
	"errors"
	"math"
	"math/bits"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// This file maps an OTLP exponential histogram point to a Prometheus native
// histogram as the protobuf exposition carries it (client_model's
// dto.Histogram), from a pmetric point: the protobuf body fills one from a
// frame's row (protoRenderer.native).

const (
	// Native histogram schemas run from -4 to 8; an OTLP scale is the same
	// number, and the bucket bases agree: 2^(2^-scale).
	nativeSchemaMax = 8
	nativeSchemaMin = -4

	// nativeDefaultZeroThreshold stands in for an OTLP zero threshold of 0
	// (only exact zeros in the zero bucket). It is what the contrib
	// prometheus exporter and Prometheus' own OTLP receiver use; a threshold
	// of 0 would not do, since a histogram with no buckets, a zero count of
	// 0 and a zero threshold of 0 reads as a classic histogram without
	// buckets. client_golang's default for its own histograms,
	// DefNativeHistogramZeroThreshold (2^-128), is not used: it would widen
	// the zero bucket over OTLP buckets that hold values between 1e-128 and
	// 2^-128.
	nativeDefaultZeroThreshold = 1e-128

	// nativeMaxFill is the longest run of empty buckets written as zeros
	// inside a span rather than ending it: the same rule as client_golang's
	// makeBuckets, since a new span costs about as much as two deltas.
	nativeMaxFill = 2
)

var (
	errNativeScale      = errors.New("exponential histogram scale is below -4, the smallest native histogram schema")
	errNativePopulation = errors.New("exponential histogram count differs from the sum of its zero and bucket counts")
	errNativeRange      = errors.New("exponential histogram bucket index or count is out of the native histogram's range")
	errNativeNoSum      = errors.New("exponential histogram has no sum")
)

// nativeHistogram returns the native histogram for an exponential
// histogram point, or an error for a point Prometheus cannot take, which
// the caller drops and counts:
//   - errNativeScale for a scale below -4 (including -53, which OTLP
//     reserves for custom buckets);
//   - errNativePopulation when the count is not the zero count plus the
//     bucket counts (at most that, with a NaN sum), which client_golang's
//     NewConstNativeHistogram refuses too and the text formats also hide;
//   - errNativeRange for bucket indexes or counts that do not fit the
//     protobuf's int32 offsets and int64 deltas;
//   - errNativeNoSum for a point without a sum: a native histogram's sum is
//     not optional, and the contrib prometheus exporter refuses such a
//     point (since v0.16x; it wrote 0 before, which made every average
//     over the series 0).
//
// The mapping:
//   - schema = scale; a scale above 8 is reduced to 8 by merging 2^(scale-8)
//     adjacent buckets (index >> (scale-8), which floors negative indexes
//     too), their counts summed.
//   - Prometheus index = OTLP index + 1, after any merging: OTLP bucket i
//     covers (base^i, base^(i+1)], Prometheus bucket k covers
//     (base^(k-1), base^k].
//   - Empty buckets are left out. Buckets with counts become spans and
//     delta-encoded counts; a gap of one or two empty buckets is written as
//     zeros inside the span, a longer one starts a new span
//     (client_golang's layout for its own histograms). The contrib
//     prometheus exporter keeps OTLP's empty buckets as explicit zeros; both
//     describe the same histogram.
//   - zero count as is; zero threshold as is, nativeDefaultZeroThreshold
//     for 0.
//   - sample count and sum as they are.
//   - created timestamp from the start timestamp, left unset when the
//     start is not after the Unix epoch (the contrib exporter writes
//     0001-01-01 then, which no reader can use).
//   - exemplars with value, timestamp and the labels span_id and trace_id
//     (those that are set, sorted by name). An exemplar without a timestamp
//     takes the point's: Prometheus ignores native histogram exemplars
//     that have none.
//
// A point flagged "no recorded value" is not this function's concern: the
// store deletes the series for it.
func nativeHistogram(dp pmetric.ExponentialHistogramDataPoint) (*dto.Histogram, error) {
	schema := dp.Scale()
	if schema < nativeSchemaMin {
		return nil, errNativeScale
	}
	var shift uint
	if schema > nativeSchemaMax {
		shift = uint(schema - nativeSchemaMax)
		schema = nativeSchemaMax
	}

	if !dp.HasSum() {
		return nil, errNativeNoSum
	}
	sum := dp.Sum()
	pos, pOK := bucketTotal(dp.Positive().BucketCounts())
	neg, nOK := bucketTotal(dp.Negative().BucketCounts())
	population, c1 := bits.Add64(pos, neg, 0)
	population, c2 := bits.Add64(population, dp.ZeroCount(), 0)
	if !pOK || !nOK || c1 != 0 || c2 != 0 {
		return nil, errNativeRange
	}
	if math.IsNaN(sum) && population > dp.Count() || !math.IsNaN(sum) && population != dp.Count() {
		return nil, errNativePopulation
	}

	zeroThreshold := dp.ZeroThreshold()
	if zeroThreshold == 0 {
		zeroThreshold = nativeDefaultZeroThreshold
	}
	h := &dto.Histogram{
		SampleCount:   proto.Uint64(dp.Count()),
		SampleSum:     proto.Float64(sum),
		Schema:        proto.Int32(schema),
		ZeroThreshold: proto.Float64(zeroThreshold),
		ZeroCount:     proto.Uint64(dp.ZeroCount()),
	}
	var ok bool
	if h.PositiveSpan, h.PositiveDelta, ok = nativeBuckets(dp.Positive(), shift); !ok {
		return nil, errNativeRange
	}
	if h.NegativeSpan, h.NegativeDelta, ok = nativeBuckets(dp.Negative(), shift); !ok {
		return nil, errNativeRange
	}
	if start := dp.StartTimestamp().AsTime(); start.Unix() > 0 {
		h.CreatedTimestamp = timestamppb.New(start)
	}
	h.Exemplars = nativeExemplars(dp.Exemplars(), dp.Timestamp())
	return h, nil
}

// bucketTotal sums counts, reporting false on overflow.
func bucketTotal(counts pcommon.UInt64Slice) (uint64, bool) {
	var n, carry uint64
	for i := 0; i < counts.Len(); i++ {
		n, carry = bits.Add64(n, counts.At(i), 0)
		if carry != 0 {
			return 0, false
		}
	}
	return n, true
}

// nativeBuckets turns one side's dense OTLP buckets into spans and deltas,
// merging 2^shift OTLP buckets into one.
func nativeBuckets(b pmetric.ExponentialHistogramDataPointBuckets, shift uint) ([]*dto.BucketSpan, []int64, bool) {
	counts := b.BucketCounts()
	var (
		spans  []*dto.BucketSpan
		deltas []int64
		prev   int64 // the last count written, deltas are against it
		next   int64 // the index after the last bucket written
	)
	emit := func(idx int64, count uint64) bool {
		if count == 0 {
			return true
		}
		if count > math.MaxInt64 || idx < math.MinInt32 || idx > math.MaxInt32 {
			return false
		}
		gap := idx - next
		if len(spans) == 0 || gap > nativeMaxFill {
			// The first span's offset is its start index, the others'
			// the number of empty buckets before them.
			if gap > math.MaxInt32 {
				return false
			}
			spans = append(spans, &dto.BucketSpan{Offset: proto.Int32(int32(gap)), Length: proto.Uint32(0)})
		} else {
			for range gap {
				*spans[len(spans)-1].Length++
				deltas = append(deltas, -prev)
				prev = 0
			}
		}
		*spans[len(spans)-1].Length++
		deltas = append(deltas, int64(count)-prev)
		prev = int64(count)
		next = idx + 1
		return true
	}

	// The sums cannot overflow: the caller checked the side's total.
	if !eachNativeBucket(b.Offset(), counts.Len(), counts.At, shift, emit) {
		return nil, nil, false
	}
	return spans, deltas, true
}

// eachNativeBucket calls fn, in increasing index order, with each
// Prometheus bucket of one side's n dense OTLP buckets starting at OTLP
// index offset (count(i) the i-th), 2^shift OTLP buckets merged into one
// and their counts summed. Merged buckets keep their order (the shift is
// monotonic), so one pass that closes a bucket when its index changes
// suffices. It stops and returns false when fn does.
func eachNativeBucket(offset int32, n int, count func(int) uint64, shift uint, fn func(idx int64, count uint64) bool) bool {
	var (
		cur   int64
		total uint64
	)
	for i := range n {
		// OTLP index offset+i; int64 because offset+i may leave int32.
		idx := (int64(offset)+int64(i))>>shift + 1
		if i > 0 && idx != cur {
			if !fn(cur, total) {
				return false
			}
			total = 0
		}
		cur = idx
		total += count(i)
	}
	return n == 0 || fn(cur, total)
}

// nativeExemplars converts OTLP exemplars; labels are added in name order,
// span_id before trace_id.
func nativeExemplars(es pmetric.ExemplarSlice, pointTS pcommon.Timestamp) []*dto.Exemplar {
	if es.Len() == 0 {
		return nil
	}
	out := make([]*dto.Exemplar, 0, es.Len())
	for i := 0; i < es.Len(); i++ {
		x := store.ExemplarOf(es.At(i), pointTS)
		out = append(out, protoExemplar(&x))
	}
	return out
}

// protoExemplar converts a stored exemplar as client_golang's
// NewMetricWithExemplars does: value, labels, timestamp.
func protoExemplar(e *store.Exemplar) *dto.Exemplar {
	x := &dto.Exemplar{Value: proto.Float64(e.Value), Timestamp: timestamppb.New(e.TS.AsTime())}
	if !e.SpanID.IsEmpty() {
		x.Label = append(x.Label, &dto.LabelPair{Name: proto.String("span_id"), Value: proto.String(hex.EncodeToString(e.SpanID[:]))})
	}
	if !e.TraceID.IsEmpty() {
		x.Label = append(x.Label, &dto.LabelPair{Name: proto.String("trace_id"), Value: proto.String(hex.EncodeToString(e.TraceID[:]))})
	}
	return x
}
