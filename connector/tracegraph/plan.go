package tracegraph // import "github.com/otelcol-red/otelcol-red/connector/tracegraph"

import (
	"time"

	"github.com/otelcol-red/otelcol-red/internal/buckets"
	"github.com/otelcol-red/otelcol-red/internal/latespans"
	"github.com/otelcol-red/otelcol-red/internal/spanfilter"
)

// defaultBoundsSeconds are servicegraph's default latency buckets.
var defaultBoundsSeconds = []float64{0.002, 0.004, 0.006, 0.008, 0.01, 0.05, 0.1, 0.2, 0.4, 0.8, 1, 1.4, 2, 5, 10, 15}

// plan is what every stage reads of the configuration, derived once.
//
// servicegraph v0.145.0 had three feature gates that changed its output, which tracegraph
// followed. In v0.159.0 connector.servicegraph.virtualNode is stable (virtual nodes are on
// whenever virtual_node_peer_attributes is not empty) and legacyLatencyMetricNames and
// legacyLatencyUnitMs are deprecated (always off: seconds, request_server and request_client);
// the registry refuses to switch any of them, so their fixed values are the only behaviour left
// to follow and the gates are no longer read (TestServicegraphGatesAreFixed).
type plan struct {
	// bounds are the explicit latency bounds; nil when the histograms are exponential.
	bounds []float64
	// explicit finds a latency's bucket in bounds; nil when the histograms are exponential.
	explicit    *buckets.Explicit
	expoMaxSize int32

	dims []string
	// peerAttrs name virtual nodes; nil when virtual nodes are off (an empty list).
	peerAttrs        []string
	virtualNodeLabel bool
	dbAttrs          []string
	weighted         bool
	// weightAttr is sampling.attribute (or span_multiplier_key); "" when not read.
	weightAttr string
	// filter is filter_policies compiled; nil keeps every span.
	filter *spanfilter.Filter
	// delta: each flush sends the interval's counts and idle series are removed.
	delta bool
	// writer is the collector's service.instance.id, the resource of delta points.
	writer string
	// links: CONSUMER spans are paired through their span links.
	links bool
	// histograms is how many latency histograms a series has: server and client, and with
	// enable_messaging_system_latency_histogram the messaging one (histMessaging).
	histograms int
	// exemplars is the most exemplars per histogram point and interval; 0: none.
	exemplars int
	// exemplarSlow (ns), when positive, makes only failed spans and spans at least this long
	// eligible as exemplars: the ones the Elasticsearch branch stores.
	exemplarSlow uint64

	flushInterval    time.Duration // 0: flush after every drained round
	expireEvery      time.Duration
	cleanEvery       time.Duration
	ttl              time.Duration
	maxItems         int
	seriesExpiration time.Duration
	tsOffset         time.Duration
	ringSize         int
	// maxSeriesPerEdge and maxCardinalityPerLabel bound the series dims add (limits.go).
	maxSeriesPerEdge       int
	maxCardinalityPerLabel int
	late                   latespans.Policy // late_spans
}

func newPlan(c *Config) *plan {
	filter, err := spanfilter.Compile("filter_policies", c.FilterPolicies)
	if err != nil {
		panic("BUG: tracegraph: filter_policies not validated: " + err.Error())
	}
	p := &plan{
		weightAttr:       c.multiplierAttribute(),
		filter:           filter,
		expoMaxSize:      c.ExponentialHistogramMaxSize,
		dims:             c.Dimensions,
		virtualNodeLabel: c.VirtualNodeExtraLabel,
		dbAttrs:          c.DatabaseNameAttributes,
		weighted:         c.Sampling.Weighted,
		delta:            c.AggregationTemporality == temporalityDelta,
		links:            c.Links.Enabled,
		histograms:       2,
		flushInterval:    defaultFlushInterval,
		expireEvery:      orDefault(c.StoreExpirationLoop, defaultStoreExpirationLoop),
		cleanEvery:       orDefault(c.CacheLoop, defaultCacheLoop),
		ttl:              c.Store.TTL,
		maxItems:         c.Store.MaxItems,
		seriesExpiration: orDefault(c.SeriesExpiration, defaultSeriesExpiration),
		tsOffset:         c.MetricsTimestampOffset,
		ringSize:         c.RingSize,

		maxSeriesPerEdge:       c.MaxSeriesPerEdge,
		maxCardinalityPerLabel: c.MaxCardinalityPerLabel,
		late:                   c.LateSpans.Resolve(),
	}
	if c.EnableMessagingSystemLatencyHistogram {
		p.histograms = 3
	}
	if c.Exemplars.Enabled {
		p.exemplars = c.Exemplars.MaxPerDataPoint
		p.exemplarSlow = uint64(max(c.Exemplars.SlowThreshold, 0))
	}
	if c.MetricsFlushInterval != nil {
		p.flushInterval = *c.MetricsFlushInterval
	}
	if p.expoMaxSize <= 0 {
		p.expoMaxSize = 0
		p.bounds = defaultBoundsSeconds
		if len(c.LatencyHistogramBuckets) > 0 {
			p.bounds = make([]float64, len(c.LatencyHistogramBuckets))
			for i, d := range c.LatencyHistogramBuckets {
				p.bounds[i] = d.Seconds()
			}
		}
		p.explicit = buckets.NewExplicit(p.bounds)
	}
	p.peerAttrs = c.VirtualNodePeerAttributes
	if p.peerAttrs == nil {
		p.peerAttrs = defaultPeerAttributes
	}
	if len(p.peerAttrs) == 0 {
		p.peerAttrs = nil
	}
	if len(p.dbAttrs) == 0 {
		p.dbAttrs = defaultDatabaseNameAttributes
	}
	return p
}

// stored reports whether a span that failed or not and ran from start to end (unix ns) may be
// named by an exemplar: with exemplars.slow_threshold, the Elasticsearch branch's rule (an
// error, or end - start at least the threshold; a span ending before it starts is not slow).
func (p *plan) stored(failed bool, start, end uint64) bool {
	return p.exemplarSlow == 0 || failed || end >= start && end-start >= p.exemplarSlow
}

// latency converts a span's duration in nanoseconds to seconds, with servicegraph's formula
// (so sums agree to the bit).
func (p *plan) latency(ns uint64) float64 {
	return float64(ns) / 1e9
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
