//go:build integration

package e2e

import (
	"context"
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

const (
	// churnRate is a million client spans a minute, none of which ever gets its server span.
	churnRate       = 1_000_000 / 60
	churnPerRequest = 1000
	churnPeers      = 10
	// churnMaxItems is configs/tracegraph.yaml's store.max_items: the 10 s ttl would hold ~167,000
	// halves at churnRate, so the store is full and evicts for most of the run.
	churnMaxItems = 100_000
)

// TestTraceGraphUnpairedStreamStaysBounded runs configs/tracegraph.yaml as shipped under a stream
// of CLIENT spans whose server span never comes (a million a minute, peer.service one of ten
// peers), for 45 s, or for $OTELCOL_RED_GRAPH_CHURN (make test-graph-churn-full: 10 minutes). While
// it runs, the halves waiting are never more than store.max_items and the resident memory of the
// second half of the run is no higher than that of the first (after a warm-up of two ttls): the
// store is bounded, not the rate. Afterwards every span sent has been expired (evicted ones
// included) and counted as a request to its virtual node, none is still waiting and none refused.
func TestTraceGraphUnpairedStreamStaysBounded(t *testing.T) {
	run := churnDuration(t, "OTELCOL_RED_GRAPH_CHURN")
	env, metricsURL := defaultEnv(t)
	c := StartCollector(t, configPath("tracegraph.yaml"), env)
	telemetry := telemetryURLOf(env)

	const pending = "otelcol_connector_tracegraph_pending_edges"
	var maxPending int
	st := streamChurn(t, env["OTLP_GRPC_ENDPOINT"], c, run, churnRequest, func(now time.Duration) {
		p, _ := SumSeries(Scrape(t, telemetry), pending, nil)
		maxPending = max(maxPending, int(p))
		require.LessOrEqual(t, int(p), churnMaxItems, "halves waiting at %s", now.Round(time.Second))
	})
	sent, firstHalfRSS, secondHalfRSS := st.sent, st.firstHalfRSS, st.secondHalfRSS
	t.Logf("%d unpaired client spans in %s; at most %d halves waiting; RSS max %d MiB in the first half, %d MiB in the second",
		sent, run, maxPending, firstHalfRSS>>20, secondHalfRSS>>20)
	st.requireFlat(t)
	require.Greater(t, maxPending, churnMaxItems*9/10, "the store filled up (the bound was reached)")

	// Every half expires within the ttl (10 s) and the sweep; then it is a virtual-node request.
	virtual := map[string]string{"connection_type": "virtual_node"}
	got := WaitForSum(t, metricsURL, "traces_service_graph_request_total", virtual, float64(sent), time.Minute)
	require.Equal(t, float64(sent), got, "requests to the virtual nodes")
	_, n := SumSeries(Scrape(t, metricsURL), "traces_service_graph_request_total", virtual)
	require.Equal(t, churnPeers, n, "one edge per peer")
	own := Scrape(t, telemetry)
	expired, _ := SumSeries(own, "otelcol_connector_tracegraph_expired_edges_total", nil)
	require.Equal(t, float64(sent), expired, "expired halves, evicted ones included")
	evicted, _ := SumSeries(own, "otelcol_connector_tracegraph_evicted_edges_total", nil)
	t.Logf("evicted before their ttl to stay within max_items: %.0f", evicted)
	require.Positive(t, evicted, "the store was full: halves were evicted")
	p, _ := SumSeries(own, pending, nil)
	require.Zero(t, p, "halves still waiting")
	dropped, _ := SumSeries(own, "otelcol_connector_tracegraph_dropped_spans_total", nil)
	require.Zero(t, dropped, "spans refused")
}

// churnStream is what streamChurn measured.
type churnStream struct {
	sent                        int
	firstHalfRSS, secondHalfRSS int64
}

// churnDuration is how long a churn test streams: 45 s (make test), or the duration in the
// environment variable name (the full forms' 10 minutes).
func churnDuration(t *testing.T, name string) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return 45 * time.Second
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, name)
	return d
}

// requireFlat fails when the resident memory of the second half of the stream passed that of the
// first by more than a fifth: memory that grows with the spans sent rather than with what is held.
func (st churnStream) requireFlat(t *testing.T) {
	t.Helper()
	require.Positive(t, st.firstHalfRSS)
	require.Positive(t, st.secondHalfRSS)
	require.LessOrEqual(t, st.secondHalfRSS, st.firstHalfRSS+st.firstHalfRSS/5, "resident memory grows with the spans sent")
}

// streamChurn sends request(seq, now) to the OTLP endpoint at churnRate spans a second for run,
// and every 5 s after a warm-up of 20 s samples the collector's resident memory (the maximum of
// each half of the rest of the run) and calls sample with the time since the start.
func streamChurn(t *testing.T, endpoint string, c *Collector, run time.Duration, request func(seq int, now time.Time) ptrace.Traces, sample func(since time.Duration)) churnStream {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := ptraceotlp.NewGRPCClient(conn)
	const warmUp = 20 * time.Second
	start := time.Now()
	tick := time.NewTicker(time.Second * churnPerRequest / churnRate)
	defer tick.Stop()
	nextSample := start.Add(warmUp)
	var st churnStream
	for seq := 0; time.Since(start) < run; seq++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(request(seq, time.Now())))
		cancel()
		require.NoError(t, err, "request %d", seq)
		st.sent += churnPerRequest
		if now := time.Now(); now.After(nextSample) {
			nextSample = now.Add(5 * time.Second)
			sample(now.Sub(start))
			rss := residentBytes(t, c.cmd.Process.Pid)
			if now.Sub(start) < warmUp+(run-warmUp)/2 {
				st.firstHalfRSS = max(st.firstHalfRSS, rss)
			} else {
				st.secondHalfRSS = max(st.secondHalfRSS, rss)
			}
		}
		<-tick.C
	}
	return st
}

// churnRequest is request seq of the stream: churnPerRequest CLIENT spans of service "caller", each
// the only span of its trace, calling one of churnPeers uninstrumented peers.
func churnRequest(seq int, now time.Time) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "caller")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	spans.EnsureCapacity(churnPerRequest)
	for i := range churnPerRequest {
		n := uint64(seq)*churnPerRequest + uint64(i)
		s := spans.AppendEmpty()
		s.SetName("GET")
		s.SetKind(ptrace.SpanKindClient)
		var tid pcommon.TraceID
		binary.BigEndian.PutUint64(tid[:8], 0xc4)
		binary.BigEndian.PutUint64(tid[8:], n+1)
		s.SetTraceID(tid)
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], n+1)
		s.SetSpanID(sid)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		s.Attributes().PutStr("peer.service", "peer-"+string(rune('a'+n%churnPeers)))
	}
	return td
}
