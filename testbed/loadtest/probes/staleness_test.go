package probes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMaxGap(t *testing.T) {
	tests := []struct {
		name     string
		times    []float64
		from, to float64
		want     float64
	}{
		{name: "no event: the whole window", from: 10, to: 40, want: 30},
		{name: "on time", times: []float64{5, 10, 15, 20}, from: 3, to: 22, want: 5},
		{name: "one late flush", times: []float64{5, 10, 22, 27}, from: 3, to: 28, want: 12},
		{name: "silent tail", times: []float64{5, 10}, from: 3, to: 30, want: 20},
		{name: "events outside the window ignored", times: []float64{1, 6, 11, 100}, from: 5, to: 12, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.InDelta(t, tt.want, maxGap(tt.times, tt.from, tt.to), 1e-9)
		})
	}
}
