package series // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"

// Late spans (late_spans): a span whose end time is further behind the batch's time than the
// slack (late), or further ahead of it than the future slack (early), is counted as now,
// dropped, or counted in a separate series marked late="true", by the policy. The reducer
// decides per span against the batch's time (Batch.TS, one clock read per request); what it
// saw is counted in the batch (LateCounts) and added to the telemetry's atomics once per
// batch by the aggregator, so the hot path touches neither the OTel API nor an atomic.

// LateMode is late_spans.policy.
type LateMode uint8

const (
	// LateCountNow counts late and early spans as if they ended now (spanmetrics' behaviour).
	LateCountNow LateMode = iota
	// LateDrop leaves them out of the metrics; the telemetry counts them.
	LateDrop
	// LateSeparate counts them in series of their own, marked LateKey="true".
	LateSeparate
)

// LateKey is the attribute that marks a series of late (or early) spans under LateSeparate.
// Series of spans on time do not carry it, so that their attributes stay spanmetrics'.
const LateKey = "late"

// LatePolicy is the plan's part of late_spans.
type LatePolicy struct {
	Mode   LateMode
	Behind int64 // slack in ns: a span ending earlier than TS-Behind is late
	Ahead  int64 // future_slack in ns: a span ending later than TS+Ahead is early
}

// lateFlag, in a series key's family byte, marks a series of late spans (LateSeparate); it
// is part of the identity, so the late and the on-time spans of one series key never merge.
const lateFlag = 0x40

// LagBounds are the upper bounds, in seconds, of the end-time lag histogram (the batch's
// time less the span's end time; negative for a span that ends in the future). The last
// bucket, +Inf, follows them.
var LagBounds = [...]float64{-60, -5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// lagBoundsNs is LagBounds in ns, searched per span.
var lagBoundsNs = func() (b [len(LagBounds)]int64) {
	for i, s := range LagBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// NumLagBuckets is the number of buckets of the lag histogram, +Inf included.
const NumLagBuckets = len(LagBounds) + 1

// Directions of LateCounts.Spans.
const (
	Late  = 0 // ended more than the slack before the batch's time
	Early = 1 // ends more than the future slack after it
)

// LateCounts is what a batch saw of its spans' end times: late and early spans (all handled
// by the one configured policy), and the lag of every span, in buckets (not cumulative).
type LateCounts struct {
	Spans [2]int64
	Lag   [NumLagBuckets]int64
}

// LagBucket returns the bucket of a lag of lag ns. Most spans arrive within a second of their
// end, so the search usually stops at the third bound.
func LagBucket(lag int64) int {
	for i, b := range lagBoundsNs {
		if lag <= b {
			return i
		}
	}
	return len(lagBoundsNs)
}

// Add adds o to c.
func (c *LateCounts) Add(o *LateCounts) {
	for i := range c.Spans {
		c.Spans[i] += o.Spans[i]
	}
	for i := range c.Lag {
		c.Lag[i] += o.Lag[i]
	}
}

// Any reports whether c counted anything.
func (c *LateCounts) Any() bool {
	return c.Spans != [2]int64{} || c.Lag != [NumLagBuckets]int64{}
}

// IsLateKey reports whether key is the key of a series of late spans.
func IsLateKey(key []byte) bool { return key[keyFamilyByte]&lateFlag != 0 }
