package graph

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

func graphTestRun(side string, spansPerSec, cpu, rss float64, spans, counted, edges, edgesCounted int64) Run {
	return Run{
		ProbeRun: solo.ProbeRun{Collector: side, Round: 1, RSSMaxMiB: rss * 2,
			Phases: []solo.Phase{{Name: "max rate", SpansPerSec: spansPerSec, CPUPercent: cpu, RSSMaxMiB: rss}}},
		HasGraph: side != "red", Counted: true, Spans: spans, CallsCounted: counted, Edges: edges, EdgesCounted: edgesCounted,
	}
}

// TestGraphReportRatiosAndLosses checks the figures GRAPH.md derives from the runs, and that a
// loss of ours fails the run while the stock side's is only reported.
func TestGraphReportRatiosAndLosses(t *testing.T) {
	res := &Result{Probe: Plan(PlanConfig{FlushInterval: 15 * time.Second, Phase: 30 * time.Second})[0],
		Graph: Shape100k, PassRequests: 2, PassSpans: 1500, PassEdges: 800}
	res.Runs = []Run{
		graphTestRun("red", 1_000_000, 80, 200, 100, 100, 0, 0),
		graphTestRun("ours", 500_000, 100, 300, 100, 100, 60, 59),
		graphTestRun("stock", 100_000, 100, 3000, 100, 90, 60, 60),
	}
	r := &Report{Start: time.Now(), FlushInterval: 15 * time.Second, Concurrency: 4, Result: res}
	var b bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&b))
	md := b.String()

	// ours ÷ stock spans/s 5; CPU µs/span: red 0.8, ours 2, stock 10: stock ÷ ours 5, ours ÷ red 2.5.
	require.Contains(t, md, "**ours ÷ stock** spans/s 5.000, **stock ÷ ours** CPU per span 5.000, RSS max 10.000")
	require.Contains(t, md, "(ours ÷ red): spans/s 0.500, CPU per span 2.500, RSS max 1.500")
	require.Contains(t, md, "| ours | 1 | 100 | 100 | 60 | 59 |")
	require.Contains(t, md, "lost 1 edge requests")
	require.Contains(t, md, "lost 10 RED calls")
	require.Equal(t, 1, r.Sides["red"].Exact)
	require.Equal(t, 0, r.Sides["ours"].Exact)

	failures := r.Failures()
	require.Len(t, failures, 1)
	require.Contains(t, failures[0], "ours (round 1): lost 1 edge requests")

	// A stock run killed over the cap is a result; one of ours is a failure.
	res.Runs[2].Killed = &harness.Sample{RSSMiB: 11 << 10}
	res.Runs[0].Killed = &harness.Sample{RSSMiB: 11 << 10}
	failures = r.Failures()
	require.Len(t, failures, 2)
	require.Contains(t, failures[0], "red (round 1): killed at 11.00 GiB RSS")
}
