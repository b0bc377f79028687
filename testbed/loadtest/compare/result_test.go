package compare

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

func TestPercentileSkipsEmptyScrapes(t *testing.T) {
	scrapes := []harness.Scrape{
		{Latency: time.Millisecond, Empty: true}, // before the first flush
		{Latency: 10 * time.Millisecond},
		{Latency: 30 * time.Millisecond},
		{Latency: 20 * time.Millisecond},
		{Latency: 15 * time.Second, Failed: true},
	}
	assert.Equal(t, 20*time.Millisecond, percentile(scrapes, 50))
	assert.Equal(t, 15*time.Second, percentile(scrapes, 99))
	assert.Zero(t, percentile(nil, 50))
}
