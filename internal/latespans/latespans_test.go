package latespans

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Lags fall in the bucket whose bound is the first at or above them, +Inf past the last.
func TestLagBucket(t *testing.T) {
	for _, tc := range []struct {
		lag  time.Duration
		want int
	}{
		{-time.Hour, 0}, {-60 * time.Second, 0}, {-59 * time.Second, 1}, {-5 * time.Second, 1},
		{0, 2}, {time.Second, 2}, {time.Second + 1, 3}, {10 * time.Minute, 9},
		{time.Hour, 11}, {time.Hour + 1, 12}, {1 << 62, 12},
	} {
		require.Equal(t, tc.want, LagBucket(int64(tc.lag)), "lag %v", tc.lag)
	}
	require.Equal(t, len(LagBounds)+1, NumLagBuckets)
	require.Equal(t, [NumLagBuckets]string{"-60", "-5", "1", "5", "10", "30", "60", "120", "300", "600", "1800", "3600", "+Inf"}, lagLabels)
}

// A span is on time within [now - slack, now + future_slack], edges included; every span's lag
// is counted, and those outside by direction.
func TestOutside(t *testing.T) {
	p := Policy{Behind: int64(30 * time.Second), Ahead: int64(10 * time.Second)}
	now := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC).UnixNano()
	var c Counts
	for _, tc := range []struct {
		end  time.Duration // from now
		want bool
	}{
		{0, false}, {-30 * time.Second, false}, {-30*time.Second - 1, true}, {-time.Hour, true},
		{10 * time.Second, false}, {10*time.Second + 1, true}, {time.Hour, true},
	} {
		require.Equal(t, tc.want, p.Outside(&c, now, uint64(now+int64(tc.end))), "end %v", tc.end)
	}
	require.Equal(t, [2]int64{Late: 2, Early: 2}, c.Spans)
	// Lags 0, 30s, 30s+1ns, 1h, -10s, -10s-1ns, -1h.
	require.Equal(t, [NumLagBuckets]int64{0: 1, 1: 2, 2: 1, 5: 1, 6: 1, 11: 1}, c.Lag)

	// The mode does not change what is counted: the connector applies it.
	for _, m := range []Mode{Drop, Separate} {
		q := p
		q.Mode = m
		var d Counts
		for _, tc := range []time.Duration{0, -time.Hour, time.Hour} {
			q.Outside(&d, now, uint64(now+int64(tc)))
		}
		require.Equal(t, [2]int64{1, 1}, d.Spans)
	}
}

// Outside runs per span in the reducers' loops: nothing allocates.
func TestOutsideAllocatesNothing(t *testing.T) {
	cfg := DefaultConfig()
	p := cfg.Resolve()
	var c Counts
	end := uint64(1)
	allocs := testing.AllocsPerRun(1000, func() {
		end += uint64(time.Second)
		p.Outside(&c, int64(500*time.Second), end)
	})
	require.Zero(t, allocs)
}

// Add sums two batches' counts element by element; Any sees any count.
func TestCountsAdd(t *testing.T) {
	var a, b Counts
	require.False(t, a.Any())
	r := rand.New(rand.NewPCG(1, 2))
	var want Counts
	for _, c := range []*Counts{&a, &b} {
		for i := range c.Spans {
			c.Spans[i] = r.Int64N(100)
			want.Spans[i] += c.Spans[i]
		}
		for i := range c.Lag {
			c.Lag[i] = r.Int64N(100)
			want.Lag[i] += c.Lag[i]
		}
	}
	a.Add(&b)
	require.Equal(t, want, a)
	require.True(t, (&Counts{Spans: [2]int64{0, 1}}).Any())
	require.True(t, (&Counts{Lag: [NumLagBuckets]int64{12: 1}}).Any())
}
