//go:build integration

package e2e

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestBurstOfNewSeriesIsNeverHollow sends a burst of new series to the binary and scrapes
// /metrics back to back during and after it, with delta output (configs/default.yaml) and with
// cumulative output. A calls series exists only because a span was counted, so no scrape may
// show one at 0 (a series before its value), and no calls series nor the total may ever be
// lower than a scrape showed before. At the end every span is counted.
//
// `make test` runs it with 19,498 series (1 s flushes). $OTELCOL_RED_BURST_SERIES (make
// test-burst-full: 1,390,000) runs it at that size instead, the delta case only, with both series
// caps lifted, 15 s flushes and requests of 10,000 spans, as in the report that found hollow
// snapshots at that size.
func TestBurstOfNewSeriesIsNeverHollow(t *testing.T) {
	shape := burstShapeFromEnv(t)
	cases := []struct {
		name    string
		overlay string
	}{
		{"delta", ""},
		{"cumulative", "connectors:\n  tracemetrics:\n    aggregation_temporality: AGGREGATION_TEMPORALITY_CUMULATIVE\n"},
	}
	if shape.full {
		cases = cases[:1]
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, metricsURL := defaultEnv(t)
			var overlays []string
			if tc.overlay != "" {
				overlays = overlayFiles(t, tc.overlay)
			}
			if shape.full {
				env["METRICS_FLUSH_INTERVAL"] = "15s"
				overlays = append(overlays, overlayFiles(t, "connectors:\n  tracemetrics:\n    max_series: 0\n    max_series_per_service: 0\n"+
					"exporters:\n  cachedprom:\n    max_series: 0\n")...)
			}
			StartCollector(t, configPath("default.yaml"), env, overlays...)

			w := newHollowWatch(metricsURL)
			stop := make(chan struct{})
			watched := make(chan struct{})
			go func() { defer close(watched); w.run(stop) }()

			began := time.Now()
			sent := sendBurst(t, env["OTLP_GRPC_ENDPOINT"], shape)
			sentIn := time.Since(began)
			// Every span counted, as the watch's scrapes see it; then a few more scrapes.
			counted := w.waitForTotal(float64(sent), shape.countTimeout)
			time.Sleep(shape.after)
			close(stop)
			<-watched

			w.mu.Lock()
			defer w.mu.Unlock()
			t.Logf("%d spans sent in %s; %d scrapes, up to %d calls series; %d failed scrapes (last: %v)",
				sent, sentIn.Round(time.Millisecond), len(w.series), w.maxSeries, w.errs, w.lastErr)
			require.Equal(t, float64(sent), counted, "calls counted")
			require.GreaterOrEqual(t, len(w.series), shape.minScrapes, "scrapes during the burst")
			partial := 0
			for _, n := range w.series {
				if n > 0 && n < w.maxSeries {
					partial++
				}
			}
			require.Positive(t, partial, "scrapes that saw the burst under way")
			require.Equal(t, shape.series, w.maxSeries, "calls series at the end")
			require.Empty(t, w.problems[:min(len(w.problems), 5)], "hollow or decreasing scrapes (%d in all)", len(w.problems))
		})
	}
}

const burstService = "burst"

// burstShape sizes the burst. Each request starts perReq/2 names after the previous one: half of
// its spans name new series, half count again on series the previous request created, so counts
// grow too. Every name is a SERVER span, every seventh span an error: names ≡ 0 (mod 7) at their
// first use give a second (error) series, so series counts both.
type burstShape struct {
	full         bool
	requests     int
	perReq       int
	pause        time.Duration // between requests, to spread the burst over several flushes
	series       int           // calls series the burst creates
	countTimeout time.Duration
	after        time.Duration
	minScrapes   int
}

func burstShapeFromEnv(t *testing.T) burstShape {
	sh := burstShape{requests: 60, perReq: 500, pause: 150 * time.Millisecond,
		countTimeout: 2 * time.Minute, after: 3 * time.Second, minScrapes: 8}
	if v := os.Getenv("OTELCOL_RED_BURST_SERIES"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "OTELCOL_RED_BURST_SERIES")
		// Spread over four 15 s flush intervals; scrapes of such a page take seconds each.
		sh = burstShape{full: true, perReq: 10_000, countTimeout: 5 * time.Minute, after: 20 * time.Second, minScrapes: 4}
		// About 2 in 7 names get an error span besides an unset one, so n series take about
		// 7n/9 names.
		names := n * 7 / 9
		sh.requests = max(1, (names-sh.perReq/2)/(sh.perReq/2))
		sh.pause = time.Minute / time.Duration(sh.requests)
	}
	sh.series = burstSeries(sh.requests, sh.perReq)
	return sh
}

// burstSeries counts the calls series of a burst: per name, one for its unset spans and one
// for its error spans, where it has them.
func burstSeries(requests, perReq int) int {
	const unset, isErr = 1, 2
	status := make([]uint8, (requests-1)*(perReq/2)+perReq)
	for r := 0; r < requests; r++ {
		for i := 0; i < perReq; i++ {
			if i%7 == 0 {
				status[r*(perReq/2)+i] |= isErr
			} else {
				status[r*(perReq/2)+i] |= unset
			}
		}
	}
	n := 0
	for _, st := range status {
		n += int(st&unset) + int(st>>1)
	}
	return n
}

// sendBurst sends the burst's requests of spans of one service and returns the spans sent.
func sendBurst(t *testing.T, endpoint string, sh burstShape) int {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(64<<20)))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sent := 0
	for r := 0; r < sh.requests; r++ {
		now := time.Now()
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", burstService)
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		spans.EnsureCapacity(sh.perReq)
		for i := 0; i < sh.perReq; i++ {
			s := spans.AppendEmpty()
			s.SetName("op-" + strconv.Itoa(r*(sh.perReq/2)+i))
			s.SetKind(ptrace.SpanKindServer)
			if i%7 == 0 {
				s.Status().SetCode(ptrace.StatusCodeError)
			}
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Duration(1+i%50) * time.Millisecond)))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		}
		_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		require.NoError(t, err, "request %d", r)
		sent += sh.perReq
		time.Sleep(sh.pause)
	}
	return sent
}

// hollowWatch scrapes in a loop and records every scrape that shows a calls series at 0, a
// calls series lower than before, or a lower total. It reads the text exposition line by line
// (only the calls lines, keyed by their label text), so that it keeps up with pages of a
// million series.
type hollowWatch struct {
	url string

	mu        sync.Mutex
	series    []int // calls series of each scrape
	maxSeries int
	problems  []string
	errs      int
	lastErr   error

	last      map[string]float64
	lastTotal float64
	total     float64 // of the latest scrape
}

func newHollowWatch(url string) *hollowWatch {
	return &hollowWatch{url: url, last: map[string]float64{}}
}

func (w *hollowWatch) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if err := w.scrapeOnce(); err != nil {
			w.mu.Lock()
			w.errs, w.lastErr = w.errs+1, err
			w.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitForTotal waits until a scrape's calls add up to want, or timeout passes, and returns the
// latest scrape's total.
func (w *hollowWatch) waitForTotal(want float64, timeout time.Duration) float64 {
	for deadline := time.Now().Add(timeout); ; time.Sleep(100 * time.Millisecond) {
		w.mu.Lock()
		total := w.total
		w.mu.Unlock()
		if total == want || time.Now().After(deadline) {
			return total
		}
	}
}

func (w *hollowWatch) scrapeOnce() error {
	seen, err := scrapeFamilyLines(w.url, callsFamily, 2*time.Minute)
	if err != nil {
		return err
	}
	w.check(seen)
	return nil
}

func (w *hollowWatch) check(seen map[string]float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	total, zeros, lower := 0.0, 0, 0
	var example string
	for key, v := range seen {
		total += v
		if v == 0 {
			zeros++
			example = key
		}
		if prev, ok := w.last[key]; ok && v < prev {
			lower++
			example = key
		}
		w.last[key] = v
	}
	n := len(seen)
	w.series = append(w.series, n)
	w.maxSeries = max(w.maxSeries, n)
	w.total = total
	if zeros > 0 || lower > 0 || total < w.lastTotal {
		w.problems = append(w.problems, "scrape "+strconv.Itoa(len(w.series))+": "+strconv.Itoa(n)+" series, "+
			strconv.Itoa(zeros)+" at 0, "+strconv.Itoa(lower)+" lower than before, total "+
			strconv.FormatFloat(total, 'f', -1, 64)+" after "+strconv.FormatFloat(w.lastTotal, 'f', -1, 64)+
			" (e.g. "+example+")")
	}
	w.lastTotal = max(w.lastTotal, total)
}
