package otlpwireencodingextension

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// counter returns the value of counter name summed over the data points whose attributes
// include attrs (key, value pairs), or 0 when it has none.
func counter(t testing.TB, tel *componenttest.Telemetry, name string, attrs ...string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	if err != nil {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is not an int64 sum", name)
	var total int64
points:
	for _, dp := range sum.DataPoints {
		for i := 0; i+1 < len(attrs); i += 2 {
			if v, ok := dp.Attributes.Value(attribute.Key(attrs[i])); !ok || v.AsString() != attrs[i+1] {
				continue points
			}
		}
		total += dp.Value
	}
	return total
}
