package probes

import (
	"fmt"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// The overload probes carry pass/fail bounds besides their figures: they are the tests of the
// faults they were written for (a flush starved by a Kafka backlog, scrapers taking the cores
// ingest needs), so `make testbed-memory` fails when one comes back.
const (
	// maxFlushLateness is how late a flush may be during a backlog, in flush intervals: a
	// starved flush shows as whole intervals late.
	maxFlushLateness = 0.5
	// minScrapedIngest is the least share of its unscraped ingest rate the collector keeps while
	// uncompressed scrapers hit /metrics back to back.
	minScrapedIngest = 0.25
)

// Gate returns what r breaks of p's bounds; nothing for probes without bounds.
func Gate(p solo.Probe, r solo.ProbeRun) []string {
	switch p.Kind {
	case KindStaleness:
		return stalenessGate(r.Staleness)
	case KindMemory:
		return exactGate(r)
	case KindScrapeLoad:
		if p.Gzip {
			// One gzip scraper compares ours and the stock twin; the report has the ratio.
			return nil
		}
		return scrapersGate(r.Phases)
	}
	return nil
}

// exactGate fails a memory run whose calls counters, where the probe checked them (ours), do not
// add up to the spans acknowledged: bytes per series only count with every span counted.
func exactGate(r solo.ProbeRun) []string {
	switch {
	case r.Sent == 0 && r.Counted == 0:
		return nil
	case r.Counted < 0:
		return []string{fmt.Sprintf("calls counters not read after %d spans", r.Sent)}
	case r.Counted != r.Sent:
		return []string{fmt.Sprintf("%d calls counted of %d spans acknowledged", r.Counted, r.Sent)}
	}
	return nil
}

func stalenessGate(st *solo.Staleness) []string {
	if st == nil {
		return []string{"no staleness measured"}
	}
	var out []string
	if st.MaxLatenessSeconds > maxFlushLateness*st.IntervalSeconds {
		out = append(out, fmt.Sprintf("a flush came %.1f s late (bound %.1f s)", st.MaxLatenessSeconds, maxFlushLateness*st.IntervalSeconds))
	}
	if st.CallsCounted != st.BacklogSpans {
		out = append(out, fmt.Sprintf("%d calls counted of %d spans in the backlog", st.CallsCounted, st.BacklogSpans))
	}
	return out
}

func scrapersGate(phases []solo.Phase) []string {
	if len(phases) < 2 || phases[0].SpansPerSec <= 0 {
		return []string{fmt.Sprintf("%d of 2 phases measured", len(phases))}
	}
	var out []string
	scraped := phases[len(phases)-1]
	if ratio := scraped.SpansPerSec / phases[0].SpansPerSec; ratio < minScrapedIngest {
		out = append(out, fmt.Sprintf("ingest while scraped %.2f× of unscraped (bound %.2f×)", ratio, minScrapedIngest))
	}
	if s := scraped.Scrapes; s.Failed > 0 || s.OtherStatus > 0 {
		out = append(out, fmt.Sprintf("scrapes without an answer %d, with another status than 200/503 %d", s.Failed, s.OtherStatus))
	}
	return out
}
