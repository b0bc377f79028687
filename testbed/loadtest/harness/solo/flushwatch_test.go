package solo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFlushesGroupChunks(t *testing.T) {
	tests := []struct {
		name       string
		deliveries []Delivery
		want       []Delivery
	}{
		{name: "none"},
		{
			name:       "one per interval",
			deliveries: []Delivery{{At: 15, Points: 10}, {At: 30, Points: 10}, {At: 45.2, Points: 10}},
			want:       []Delivery{{At: 15, Points: 10}, {At: 30, Points: 10}, {At: 45.2, Points: 10}},
		},
		{
			name:       "chunks of one flush",
			deliveries: []Delivery{{At: 15, Points: 4}, {At: 15.2, Points: 4}, {At: 16, Points: 2}, {At: 30.4, Points: 10}},
			want:       []Delivery{{At: 15, Points: 10}, {At: 30.4, Points: 10}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Flushes(tt.deliveries, 15*time.Second))
		})
	}
}
