package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import (
	"math"
	"time"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/hll"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
)

// demand estimates, per configured limit, how many distinct series it was offered and how
// many of them it refused, over about the last series_expiration: what the limit would hold
// without it, and what it turned away. The limits are checked in turn (aggregation_cardinality_limit,
// max_series_per_service, max_series), so a limit is offered the series the limits before it
// let through: every series that has its own, and those refused by it or by a later one.
//
// The aggregator feeds it, on its goroutine: a series with its own series once per interval
// (its first span of the interval), a refused series at every batch. It keeps HyperLogLog
// windows (internal/hll) of fixed size, whatever the series count: 2 per limit, each
// demandParts+1 sketches of 2^demandPrecision bytes (160 KiB per limit). The estimates are
// published at each swap as gauges by limit, never by service, so the connector's own
// telemetry stays bounded too.
type demand struct {
	offered  [series.OverflowKinds]*hll.Window // by limit; nil when the limit is not configured
	rejected [series.OverflowKinds]*hll.Window
}

const (
	// demandPrecision gives a relative standard error of 0.81% (internal/hll).
	demandPrecision = 14
	// demandParts is the parts of a window: it covers between 3/4 of series_expiration and
	// all of it.
	demandParts = 4
)

func newDemand(p *series.Plan, now int64) *demand {
	on := [series.OverflowKinds]bool{
		series.LimitOverflow:   p.CardLimit > 0,
		series.ServiceOverflow: p.MaxService > 0,
		series.GlobalOverflow:  p.MaxSeries > 0,
	}
	var d demand
	configured := false
	for k, ok := range on {
		if ok {
			d.offered[k] = hll.NewWindow(demandPrecision, time.Duration(p.SeriesIdle), demandParts, now)
			d.rejected[k] = hll.NewWindow(demandPrecision, time.Duration(p.SeriesIdle), demandParts, now)
			configured = true
		}
	}
	if !configured {
		return nil
	}
	return &d
}

// admitted records a series that has its own series: every limit was offered it.
func (d *demand) admitted(h uint64) {
	for _, w := range d.offered {
		if w != nil {
			w.Add(h)
		}
	}
}

// refused records a series that limit k refused: k and the limits before it were offered it.
func (d *demand) refused(h uint64, k series.Overflow) {
	for l := series.LimitOverflow; l <= k; l++ {
		if w := d.offered[l]; w != nil {
			w.Add(h)
		}
	}
	d.rejected[k].Add(h)
}

// publish moves the windows on to now and stores their estimates for the telemetry.
func (d *demand) publish(now int64, tel *telemetry.Telemetry) {
	if d == nil {
		return
	}
	for k := range d.offered {
		if d.offered[k] == nil {
			continue
		}
		d.offered[k].Advance(now)
		d.rejected[k].Advance(now)
		tel.SeriesDemand[k].Store(int64(math.Round(d.offered[k].Estimate())))
		tel.OverflowSeries[k].Store(int64(math.Round(d.rejected[k].Estimate())))
	}
}
