package sampling

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	contrib "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFromTraceStateGolden(t *testing.T) {
	for _, tc := range []struct {
		ts     string
		count  float64
		status Status
	}{
		{"", 1, Absent},
		{"vendor=x", 1, Absent},
		{"ot=rv:0123456789abcd", 1, Absent},
		{"ot=th:0", 1, Valid},
		{"ot=th:8", 2, Valid},
		{"ot=th:c", 4, Valid},
		{"ot=th:C", 4, Valid},
		{"ot=th:e", 8, Valid},
		{"ot=th:f", 16, Valid},
		{"ot=th:ff", 256, Valid},
		{"ot=th:ffffffffffffff", 1 << 56, Valid},
		// The spec's 1% example: T = 0xfd70a4 << 32, p = 0x28f5c/2^24 = 0.0099999.
		{"ot=th:fd70a4", float64(1<<24) / float64(0x28f5c), Valid},
		{"ot=th:8;rv:80000000000000", 2, Valid}, // rv == th passes: T <= R
		{"ot=rv:ffffffffffffff;th:8", 2, Valid},
		{"ot=th:8;rv:7fffffffffffff", 1, Invalid}, // rv < th: inconsistent
		{"ot=th:8;rv:7fff", 1, Invalid},           // rv must have 14 digits
		{"ot=th:8;rv:zzzzzzzzzzzzzz", 1, Invalid},
		{"ot=th:", 1, Invalid},
		{"ot=th:g", 1, Invalid},
		{"ot=th:0x8", 1, Invalid},
		{"ot=th:-8", 1, Invalid},
		{"ot=th:fffffffffffffff", 1, Invalid}, // 15 digits: too long
		{"a=b, ot=th:c;foo:bar ,c=d", 4, Valid},
		{"a=b,\tot=th:8", 2, Valid},
		{"xot=th:8", 1, Absent},
		{"ot=xth:8", 1, Absent},
	} {
		t.Run(tc.ts, func(t *testing.T) {
			c, st := FromTraceState(tc.ts)
			assert.Equal(t, tc.status, st)
			assert.Equal(t, tc.count, c)
		})
	}
	c, _ := FromTraceState("ot=th:fd70a4")
	assert.InDelta(t, 100, c, 0.001)
}

// TestFromTraceStateMatchesContrib compares with the contrib sampling package on random
// thresholds and randomness: on whatever it accepts, the adjusted counts agree to the bit.
func TestFromTraceStateMatchesContrib(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const hexdigits = "0123456789abcdef"
	checked := 0
	for range 20000 {
		var sb strings.Builder
		n := 1 + rng.IntN(numHexDigits)
		for range n {
			sb.WriteByte(hexdigits[rng.IntN(16)])
		}
		th := sb.String()
		ot := "th:" + th
		if rng.IntN(2) == 0 {
			sb.Reset()
			for range numHexDigits {
				sb.WriteByte(hexdigits[rng.IntN(16)])
			}
			ot += ";rv:" + sb.String()
		}
		want, err := contrib.NewOpenTelemetryTraceState(ot)
		require.NoError(t, err, ot)
		got, st := FromTraceState("ot=" + ot)
		thr, _ := want.TValueThreshold()
		if rnd, ok := want.RValueRandomness(); ok && !thr.ShouldSample(rnd) {
			assert.Equal(t, Invalid, st, ot)
			assert.Equal(t, 1.0, got, ot)
			continue
		}
		require.Equal(t, Valid, st, ot)
		require.Equal(t, want.AdjustedCount(), got, ot)
		checked++
	}
	assert.Greater(t, checked, 10000)
	for _, bad := range []string{"th:", "th:fffffffffffffff", "th:8;rv:123", "th:xyz"} {
		_, err := contrib.NewOpenTelemetryTraceState(bad)
		require.Error(t, err, bad)
		_, st := FromTraceState("ot=" + bad)
		assert.Equal(t, Invalid, st, bad)
	}
}

func TestFromTraceStateAllocatesNothing(t *testing.T) {
	ts := "a=b, ot=th:fd70a4;rv:fe123456789abc, c=d"
	var sum float64
	allocs := testing.AllocsPerRun(1000, func() {
		c, _ := FromTraceState(ts)
		sum += c
	})
	assert.Zero(t, allocs)
	assert.Positive(t, sum)
}

func TestFromProbability(t *testing.T) {
	for _, tc := range []struct {
		p      float64
		count  float64
		status Status
	}{
		{1, 1, Valid},
		{0.5, 2, Valid},
		{0.1, 10, Valid},
		{0, 1, Invalid},
		{-0.5, 1, Invalid},
		{1.5, 1, Invalid},
		{math.NaN(), 1, Invalid},
		{math.Inf(1), 1, Invalid},
	} {
		c, st := FromProbability(tc.p)
		assert.Equal(t, tc.status, st, tc.p)
		assert.Equal(t, tc.count, c, tc.p)
	}
}

// TestRoundCarriesRemainder: the integer counts of a series never drift 1 or more from the
// running weighted total, and integer weights come out exactly.
func TestRoundCarriesRemainder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var carry, exact float64
	var total uint64
	for i := range 100000 {
		w := 1 / (0.01 + 0.99*rng.Float64())
		exact += w
		total += Round(&carry, w)
		require.Less(t, exact-float64(total), 1+1e-6, i)
		require.Greater(t, exact-float64(total), -1e-6, i)
		require.True(t, carry >= 0 && carry < 1, carry)
	}
	carry, total = 0, 0
	for range 10000 {
		total += Round(&carry, 10)
	}
	assert.Equal(t, uint64(100000), total)
	assert.Zero(t, carry)
}

func BenchmarkFromTraceState(b *testing.B) {
	for _, ts := range []string{"vendor=abc,ot=th:c;rv:fe123456789abc", "ot=th:c", "vendor=abc,congo=t61rcWkgMzE", "ot=th:c;rv:fe123456789abc", "vendor=abc,ot=th:c"} {
		b.Run(ts, func(b *testing.B) {
			var sum float64
			for range b.N {
				c, _ := FromTraceState(ts)
				sum += c
			}
			if sum == 0 {
				b.Fatal(sum)
			}
		})
	}
}

// FromAttribute reads the probability from a double, an int or a numeric string, and counts
// anything else, or a probability outside (0, 1], as 1 and Invalid.
func TestFromAttribute(t *testing.T) {
	for _, tc := range []struct {
		v      traceview.Val
		weight float64
		status Status
	}{
		{traceview.DoubleVal(0.25), 4, Valid},
		{traceview.IntVal(1), 1, Valid},
		{traceview.StrVal("0.5"), 2, Valid},
		{traceview.StrVal("half"), 1, Invalid},
		{traceview.DoubleVal(0), 1, Invalid},
		{traceview.DoubleVal(1.5), 1, Invalid},
		{traceview.IntVal(2), 1, Invalid},
		{traceview.BoolVal(true), 1, Invalid},
	} {
		w, st := FromAttribute(tc.v)
		if w != tc.weight || st != tc.status {
			t.Errorf("%v: got %v, %v; want %v, %v", tc.v.Type(), w, st, tc.weight, tc.status)
		}
	}
}
