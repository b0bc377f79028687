//go:build integration

package compare

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// TestRunBothBinaries runs a short paced scenario on the built binaries (make build stock-twin):
// both must take every span and count it in their calls counters.
func TestRunBothBinaries(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	collector := func(name, bin, config string) harness.Collector {
		c := harness.Collector{Name: name, Binary: filepath.Join(root, "bin", bin), Config: filepath.Join(root, config)}
		_, err := os.Stat(c.Binary)
		require.NoError(t, err, "build the binaries first: make build stock-twin")
		return c
	}
	o := Options{
		Options: harness.Options{
			ScrapeInterval: 2 * time.Second,
			SampleInterval: 500 * time.Millisecond,
			FlushInterval:  time.Second,
			DrainTimeout:   30 * time.Second,
			Concurrency:    2,
			CallsMetric:    harness.CallsMetric,
			RawDir:         t.TempDir(),
		},
		Ours:     collector("ours", "otelcol-red", "configs/default.yaml"),
		Stock:    collector("stock", "otelcol-stock", "configs/stock-twin.yaml"),
		Duration: 5 * time.Second,
	}
	pool, err := harness.NewPool(harness.Shape{Services: 5, SpanNames: 10}, 100, 1)
	require.NoError(t, err)
	sc := Scenario{Name: "smoke", Transport: TransportOTLP, Shape: pool.Shape, Rate: 5000}

	res, err := Run(context.Background(), sc, pool, o)
	require.NoError(t, err)
	for _, s := range []Side{res.Ours, res.Stock} {
		assert.Positive(t, s.Sent, s.Name)
		assert.Zero(t, s.Lost, s.Name)
		assert.Equal(t, s.Sent, s.Counted, s.Name)
		assert.Positive(t, s.CPUPercent, s.Name)
		assert.NotEmpty(t, s.Samples, s.Name)
		assert.NotEmpty(t, s.Scrapes, s.Name)
		assert.Empty(t, s.Error, s.Name)
	}
}
