package harness

import (
	"fmt"
	"slices"
	"time"
)

// Sample is one reading of a collector during a run, taken every sample interval.
type Sample struct {
	// At is seconds since the load started.
	At float64 `json:"at"`
	// CPUPercent is CPU time over wall time since the previous sample; 200 is both cores.
	CPUPercent float64 `json:"cpu_percent"`
	RSSMiB     float64 `json:"rss_mib"`
	// SpansPerSec is the rate of spans the collector took since the previous sample.
	SpansPerSec float64 `json:"spans_per_sec"`
}

// Millis is a duration that reads as milliseconds in JSON and tables.
type Millis float64

// ToMillis converts d.
func ToMillis(d time.Duration) Millis { return Millis(float64(d) / float64(time.Millisecond)) }

// NearestRank returns the p-th percentile (0 < p ≤ 100) of sorted by the nearest-rank method,
// which never invents a value between two observed ones; 0 for none.
func NearestRank(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// Median returns the middle of xs, the mean of the two middle values for an even count, and 0
// for none. xs is left as it was.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Spread is the median and range of a figure over runs; all zero without runs.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// SpreadOf returns the median and range of xs.
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	return Spread{Median: Median(xs), Min: slices.Min(xs), Max: slices.Max(xs)}
}

// Text prints the median and its range with format, or "-" without runs.
func (s Spread) Text(format string) string {
	if s == (Spread{}) {
		return "-"
	}
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.Median, s.Min, s.Max)
}
