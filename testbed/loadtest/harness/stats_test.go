package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{name: "none", want: 0},
		{name: "one", xs: []float64{0.8}, want: 0.8},
		{name: "odd count, unsorted", xs: []float64{0.96, 0.76, 0.90}, want: 0.90},
		{name: "even count: mean of the middle two", xs: []float64{0.78, 0.96, 0.76, 0.90}, want: 0.84},
		{name: "an outlier does not move it", xs: []float64{0.78, 0.79, 10}, want: 0.79},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.xs...)
			assert.InDelta(t, tt.want, Median(tt.xs), 1e-12)
			assert.Equal(t, in, tt.xs, "median must not reorder its input")
		})
	}
}

func TestSpreadOf(t *testing.T) {
	assert.Equal(t, Spread{}, SpreadOf(nil))
	assert.Equal(t, Spread{Median: 2, Min: 1, Max: 5}, SpreadOf([]float64{5, 1, 2}))
}
