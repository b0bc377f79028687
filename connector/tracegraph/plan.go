package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"time"

	"github.com/otelcol-red/otelcol-red/internal/buckets"
)

// defaultBoundsSeconds and defaultBoundsMs are servicegraph's default latency buckets.
var (
	defaultBoundsSeconds = []float64{0.002, 0.004, 0.006, 0.008, 0.01, 0.05, 0.1, 0.2, 0.4, 0.8, 1, 1.4, 2, 5, 10, 15}
	defaultBoundsMs      = []float64{2, 4, 6, 8, 10, 50, 100, 200, 400, 800, 1000, 1400, 2000, 5000, 10_000, 15_000}
)

// plan is what every stage reads of the configuration and the feature gates, derived once.
type plan struct {
	// bounds are the explicit latency bounds; nil when the histograms are exponential.
	bounds []float64
	// explicit finds a latency's bucket in bounds; nil when the histograms are exponential.
	explicit    *buckets.Explicit
	expoMaxSize int32
	// unitMs: latencies in milliseconds (legacyLatencyUnitMs gate), else seconds.
	unitMs      bool
	legacyNames bool

	dims []string
	// peerAttrs name virtual nodes; nil when virtual nodes are off (gate or empty list).
	peerAttrs    []string
	virtualLabel bool
	dbAttrs      []string
	weighted     bool
	// delta: each flush sends the interval's counts and idle series are removed.
	delta bool
	// writer is the collector's service.instance.id, the resource of delta points.
	writer string

	flushInterval    time.Duration // 0: flush after every drained round
	expireEvery      time.Duration
	cleanEvery       time.Duration
	ttl              time.Duration
	maxItems         int
	seriesExpiration time.Duration
	tsOffset         time.Duration
	ringSize         int
}

func newPlan(c *Config, g gates) *plan {
	p := &plan{
		expoMaxSize:      c.ExponentialHistogramMaxSize,
		unitMs:           g.legacyUnitMs,
		legacyNames:      g.legacyMetricNames,
		dims:             c.Dimensions,
		virtualLabel:     c.VirtualNodeExtraLabel,
		dbAttrs:          c.DatabaseNameAttributes,
		weighted:         c.Sampling.Weighted,
		delta:            c.AggregationTemporality == temporalityDelta,
		flushInterval:    defaultFlushInterval,
		expireEvery:      orDefault(c.StoreExpirationLoop, defaultStoreExpirationLoop),
		cleanEvery:       orDefault(c.CacheLoop, defaultCacheLoop),
		ttl:              c.Store.TTL,
		maxItems:         c.Store.MaxItems,
		seriesExpiration: orDefault(c.SeriesExpiration, defaultSeriesExpiration),
		tsOffset:         c.MetricsTimestampOffset,
		ringSize:         c.RingSize,
	}
	if c.MetricsFlushInterval != nil {
		p.flushInterval = *c.MetricsFlushInterval
	}
	if p.expoMaxSize <= 0 {
		p.expoMaxSize = 0
		p.bounds = defaultBoundsSeconds
		if p.unitMs {
			p.bounds = defaultBoundsMs
		}
		if len(c.LatencyHistogramBuckets) > 0 {
			p.bounds = make([]float64, len(c.LatencyHistogramBuckets))
			for i, d := range c.LatencyHistogramBuckets {
				p.bounds[i] = p.bound(d)
			}
		}
		p.explicit = buckets.NewExplicit(p.bounds)
	}
	p.peerAttrs = c.VirtualNodePeerAttributes
	if p.peerAttrs == nil {
		p.peerAttrs = defaultPeerAttributes
	}
	if !g.virtualNode || len(p.peerAttrs) == 0 {
		p.peerAttrs = nil
	}
	if len(p.dbAttrs) == 0 {
		p.dbAttrs = defaultDatabaseNameAttributes
	}
	return p
}

// latency converts a span's duration in nanoseconds to the metrics' unit, with servicegraph's
// formula (so sums agree to the bit).
func (p *plan) latency(ns uint64) float64 {
	if p.unitMs {
		return float64(ns) / 1e6
	}
	return float64(ns) / 1e9
}

// bound converts a configured bucket bound to the metrics' unit; under the ms gate
// servicegraph truncates bounds to whole milliseconds, and so does this.
func (p *plan) bound(d time.Duration) float64 {
	if p.unitMs {
		return float64(d.Milliseconds())
	}
	return d.Seconds()
}

// unit is the latency histograms' unit.
func (p *plan) unit() string {
	if p.unitMs {
		return "ms"
	}
	return "s"
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
