package render

import (
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"
)

// testStore returns a store with the options the exporter's default
// configuration gives it, adjusted by mutate, holding batches. The caller
// closes it.
func testStore(mutate func(*store.Options), batches ...pmetric.Metrics) *store.Store {
	opts := store.Options{Names: naming.New(naming.Options{WithSuffixes: true}), MaxSeries: 1_001_000}
	if mutate != nil {
		mutate(&opts)
	}
	s := store.New(opts)
	for _, b := range batches {
		s.Consume(b, time.Now())
	}
	return s
}
