//go:build integration

package e2e

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
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
func TestBurstOfNewSeriesIsNeverHollow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		overlay string
	}{
		{"delta", ""},
		{"cumulative", "connectors:\n  tracemetrics:\n    aggregation_temporality: AGGREGATION_TEMPORALITY_CUMULATIVE\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, metricsURL := defaultEnv(t)
			var overlays []string
			if tc.overlay != "" {
				overlays = overlayFiles(t, tc.overlay)
			}
			StartCollector(t, configPath("default.yaml"), env, overlays...)

			w := newHollowWatch(metricsURL)
			stop := make(chan struct{})
			watched := make(chan struct{})
			go func() { defer close(watched); w.run(stop) }()

			sent := sendBurst(t, env["OTLP_GRPC_ENDPOINT"], burstRequests, burstSpansPerRequest)
			WaitForSum(t, metricsURL, callsFamily, map[string]string{"service_name": burstService}, float64(sent), 2*time.Minute)
			// Scrape on for a few flush intervals after the totals are complete.
			time.Sleep(3 * time.Second)
			close(stop)
			<-watched

			w.mu.Lock()
			defer w.mu.Unlock()
			t.Logf("%d scrapes, up to %d calls series, %d spans; %d failed scrapes (last: %v)", len(w.series), w.maxSeries, sent, w.errs, w.lastErr)
			require.GreaterOrEqual(t, len(w.series), 8, "scrapes during the burst")
			partial := 0
			for _, n := range w.series {
				if n > 0 && n < w.maxSeries {
					partial++
				}
			}
			require.Positive(t, partial, "scrapes that saw the burst under way")
			require.Empty(t, w.problems[:min(len(w.problems), 5)], "hollow or decreasing scrapes (%d in all)", len(w.problems))
		})
	}
}

const (
	burstService         = "burst"
	burstRequests        = 60
	burstSpansPerRequest = 500
	// Each request starts burstNew names after the previous one: half of its spans name new
	// series, half count again on series the previous request created, so counts grow too.
	burstNew = burstSpansPerRequest / 2
)

// sendBurst sends requests of spans of one service whose names walk forward (see burstNew), and
// returns the spans sent.
func sendBurst(t *testing.T, endpoint string, requests, perReq int) int {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sent := 0
	for r := 0; r < requests; r++ {
		now := time.Now()
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", burstService)
		spans := rs.ScopeSpans().AppendEmpty().Spans()
		spans.EnsureCapacity(perReq)
		for i := 0; i < perReq; i++ {
			s := spans.AppendEmpty()
			s.SetName("op-" + strconv.Itoa(r*burstNew+i))
			s.SetKind(ptrace.SpanKindServer)
			if i%7 == 0 {
				s.Status().SetCode(ptrace.StatusCodeError)
			}
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Duration(1+i%50) * time.Millisecond)))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		}
		_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		require.NoError(t, err, "request %d", r)
		sent += perReq
		// Spread the burst over several flush intervals (1 s in defaultEnv).
		time.Sleep(150 * time.Millisecond)
	}
	return sent
}

// hollowWatch scrapes in a loop and records every scrape that shows a calls series at 0, a
// calls series lower than before, or a lower total.
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
		fams, err := scrape(w.url)
		if err != nil {
			w.mu.Lock()
			w.errs, w.lastErr = w.errs+1, err
			w.mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			continue
		}
		w.check(fams[callsFamily])
	}
}

func (w *hollowWatch) check(f *dto.MetricFamily) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f == nil {
		w.series = append(w.series, 0)
		return
	}
	total, zeros, lower := 0.0, 0, 0
	var example string
	for _, m := range f.GetMetric() {
		key := labelKey(m)
		v := m.GetCounter().GetValue()
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
	n := len(f.GetMetric())
	w.series = append(w.series, n)
	w.maxSeries = max(w.maxSeries, n)
	if zeros > 0 || lower > 0 || total < w.lastTotal {
		w.problems = append(w.problems, "scrape "+strconv.Itoa(len(w.series))+": "+strconv.Itoa(n)+" series, "+
			strconv.Itoa(zeros)+" at 0, "+strconv.Itoa(lower)+" lower than before, total "+
			strconv.FormatFloat(total, 'f', -1, 64)+" after "+strconv.FormatFloat(w.lastTotal, 'f', -1, 64)+
			" (e.g. "+example+")")
	}
	w.lastTotal = max(w.lastTotal, total)
}

func labelKey(m *dto.Metric) string {
	pairs := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		pairs = append(pairs, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}
