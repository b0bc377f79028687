package cachedprom

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// vmRSS returns the process' resident set size from /proc/self/status.
func vmRSS(tb testing.TB) int64 {
	f, err := os.Open("/proc/self/status")
	require.NoError(tb, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(tb, err)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// BenchmarkRSS feeds RED series to a running exporter as tracemetrics'
// default pipeline does, delta batches of 2000 points generated on the fly
// (so the input never accumulates), two flush intervals, a render after
// each, then reports the process' RSS growth and the live heap per RED
// series, at the default GOGC. Run one size per process so the RSS is this
// size's: CACHEDPROM_BENCH_RSS_SERIES (default 100000 RED series).
func BenchmarkRSS(b *testing.B) {
	n := 100_000
	if v := os.Getenv("CACHEDPROM_BENCH_RSS_SERIES"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	for i := 0; i < b.N; i++ {
		runtime.GC()
		rssBefore, heapBefore := vmRSS(b), heapInUse()
		e, _ := startOurs(b, func(c *Config) { c.RenderInterval, c.MaxSeries = time.Hour, 0 })
		t0 := time.Unix(1_700_000_000, 0)
		for flush := 1; flush <= 2; flush++ {
			start, end := t0.Add(time.Duration(flush-1)*time.Minute), t0.Add(time.Duration(flush)*time.Minute)
			for from := 0; from < n; from += 1000 {
				require.NoError(b, e.ConsumeMetrics(context.Background(), promtest.RedDeltaBatch(from, min(from+1000, n), start, end)))
			}
			e.renderNow()
		}
		require.Equal(b, 2*n, e.store.Sizes().Rows, "calls and duration of every RED series")
		rss, heap := vmRSS(b)-rssBefore, heapInUse()-heapBefore
		b.ReportMetric(float64(rss)/float64(n), "rss-bytes/red-series")
		b.ReportMetric(float64(heap)/float64(n), "heap-bytes/red-series")
		b.ReportMetric(float64(e.store.Sizes().OffHeapBytes)/float64(n), "offheap-bytes/red-series")
		b.ReportMetric(float64(len(e.snapshot.Load().Body(render.BodyText).Gzip)), "gzip-bytes")
	}
}
