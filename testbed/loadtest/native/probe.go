package native

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// The native histogram probe compares, one collector at a time on the same pre-encoded requests,
// ours with exponential duration histograms served as native histograms, the same with classic
// (explicit bucket) histograms, and the stock twin with spanmetrics' exponential histograms and
// the contrib prometheus exporter. Each side is loaded at the highest rate it acknowledges (the
// ingest figure), then left idle until its last flush is rendered (the memory figure, the RSS
// against the RSS before any load), then scraped a few times back to back in the format a
// Prometheus of that setup asks for (the scrape figures).

// prometheus3NativeAccept is the Accept header Prometheus 3 sends with scrape_native_histograms:
// the delimited protobuf exposition first, the text formats after it.
const prometheus3NativeAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6," +
	"application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4," +
	"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"

// protoContentType is what a protobuf answer's Content-Type starts with.
const protoContentType = "application/vnd.google.protobuf"

// acceptHeader is the Accept header that asks for f.
func acceptHeader(f solo.NativeFormat) string {
	if f == solo.FormatProtobuf {
		return prometheus3NativeAccept
	}
	return harness.PrometheusAccept
}

// nativeFormats are the formats each side of the native probe is scraped in: the exponential
// sides as Prometheus 3 with native histograms scrapes, the classic side as a text scraper does.
var nativeFormats = map[string][]solo.NativeFormat{
	"ours":         {solo.FormatProtobuf},
	"stock":        {solo.FormatProtobuf},
	"ours-classic": {solo.FormatText},
}

// sidesScrapedIn returns the sides of sides that the native probe scrapes in format f.
func sidesScrapedIn(sides []string, f solo.NativeFormat) []string {
	var out []string
	for _, s := range sides {
		for _, g := range nativeFormats[s] {
			if g == f {
				out = append(out, s)
			}
		}
	}
	return out
}

// nativeScrapeTimeout bounds one timed scrape: the stock exporter renders 100k series per scrape.
const nativeScrapeTimeout = 2 * time.Minute

// nativeScrapeSpacing is the least time from the start of one timed scrape to the next. Ours
// serves one client address at most every min_scrape_interval (250ms by default) and holds a
// sooner scrape until then: back to back, its latency would be that wait, not the scrape.
// Prometheus scrapes a target once per scrape_interval, so spacing them costs the comparison
// nothing; a scrape that takes longer (the stock exporter's) is followed at once.
const nativeScrapeSpacing = time.Second

// nativePrimeTimeout bounds the wait for the first answer in the asked format: ours renders the
// protobuf body only once a protobuf client has asked (the first such scrape gets text).
const nativePrimeTimeout = time.Minute

// runNative runs the native probe's sides in turn on one pool.
func runNative(ctx context.Context, p solo.Probe, cs solo.Collectors, pools *solo.Pools, o harness.Options, res *solo.ProbeResult) error {
	return solo.EachSideOnPool(ctx, p, cs, pools, res, func(c harness.Collector, pool *harness.Pool, run *solo.ProbeRun) error {
		return nativeRun(ctx, p, c, pool, o, run)
	})
}

func nativeRun(ctx context.Context, p solo.Probe, c harness.Collector, pool *harness.Pool, o harness.Options, run *solo.ProbeRun) error {
	formats, ok := nativeFormats[c.Name]
	if !ok {
		return fmt.Errorf("the native probe has no scrape format for side %q", c.Name)
	}
	s, err := solo.Start(ctx, c, o, p.Name+"-"+c.Name, p.Env(), p.Pinned())
	if err != nil {
		return err
	}
	nr := &solo.NativeRun{}
	run.Native = nr
	// A few readings of the started, empty collector.
	if !s.Wait(ctx, 3*time.Second) {
		return s.Finish(run)
	}
	nr.RSSIdleMiB = lastRSS(s.Samples())
	l, err := solo.StartLoad(pool, s, o.Concurrency)
	if err != nil {
		return errors.Join(err, s.Finish(run))
	}
	measured := s.Wait(ctx, p.Warmup)
	if measured {
		var phase solo.Phase
		phase, measured = solo.MeasurePhase(ctx, s, l, "load", p.Window, nil)
		run.Phases = append(run.Phases, phase)
	}
	l.End()
	// The last interval's flush and its render, then the memory figure.
	if !measured || !s.Wait(ctx, o.FlushInterval+5*time.Second) {
		return s.Finish(run)
	}
	nr.RSSSettledMiB = lastRSS(s.Samples())
	client := &http.Client{Timeout: nativeScrapeTimeout, Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	for _, f := range formats {
		from := s.Elapsed()
		sc := scrapeNative(ctx, client, s.MetricsURL(), f, p.TimedScrapes)
		sc.RSSMaxMiB, _ = solo.RSSBetween(s.Samples(), from.Seconds(), s.Elapsed().Seconds()+1)
		nr.Scrapes = append(nr.Scrapes, sc)
	}
	return s.Finish(run)
}

// lastRSS is the last reading's RSS, 0 without readings.
func lastRSS(samples []harness.Sample) float64 {
	if len(samples) == 0 {
		return 0
	}
	return samples[len(samples)-1].RSSMiB
}

// scrapeNative waits until url answers in format f, then scrapes it n times, each scrape starting
// nativeScrapeSpacing after the previous one (the one that found the format included) or as soon
// as it ended when it took longer, and inflates (and, for protobuf, decodes) the last body.
func scrapeNative(ctx context.Context, client *http.Client, url string, f solo.NativeFormat, n int) solo.NativeScrapes {
	out := solo.NativeScrapes{Format: f}
	deadline := time.Now().Add(nativePrimeTimeout)
	var prev time.Duration // the last scrape's latency: the next waits for the rest of the spacing
	for {
		got, err := getNative(ctx, client, url, f, false)
		prev = got.latency
		if err != nil {
			out.Error = err.Error()
			return out
		}
		out.ContentType = got.contentType
		if got.matches(f) {
			break
		}
		if time.Now().After(deadline) {
			out.Error = fmt.Sprintf("answered %q for %s after %s", got.contentType, f, nativePrimeTimeout)
			return out
		}
		select {
		case <-ctx.Done():
			out.Error = ctx.Err().Error()
			return out
		case <-time.After(time.Second):
		}
	}
	var lat []time.Duration
	for i := range n {
		select {
		case <-ctx.Done():
			out.Error = ctx.Err().Error()
			return out
		case <-time.After(nativeScrapeSpacing - prev):
		}
		got, err := getNative(ctx, client, url, f, i == n-1)
		prev = got.latency
		if err != nil {
			out.Error = err.Error()
			break
		}
		if !got.matches(f) {
			out.Error = fmt.Sprintf("answered %q for %s", got.contentType, f)
			break
		}
		out.OK++
		lat = append(lat, got.latency)
		out.Latencies = append(out.Latencies, harness.ToMillis(got.latency))
		out.WireBytes, out.ContentType = got.wire, got.contentType
		if got.body != nil {
			out.BodyBytes = got.body.bytes
			out.Body = got.body.proto
		}
	}
	slices.Sort(lat)
	out.P50 = harness.ToMillis(harness.NearestRank(lat, 50))
	if len(lat) > 0 {
		out.Max = harness.ToMillis(lat[len(lat)-1])
	}
	return out
}

// nativeAnswer is one scrape of scrapeNative.
type nativeAnswer struct {
	contentType string
	latency     time.Duration
	wire        int64
	body        *inflatedBody
}

func (a nativeAnswer) matches(f solo.NativeFormat) bool {
	return (f == solo.FormatProtobuf) == strings.HasPrefix(a.contentType, protoContentType)
}

type inflatedBody struct {
	bytes int64
	proto *solo.ProtoBodyStats
}

// getNative scrapes url once with gzip, timing it to the last compressed byte; with inspect it
// then inflates the body and decodes it when it is protobuf.
func getNative(ctx context.Context, client *http.Client, url string, f solo.NativeFormat, inspect bool) (nativeAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nativeAnswer{}, err
	}
	req.Header.Set("Accept", acceptHeader(f))
	req.Header.Set("Accept-Encoding", "gzip")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nativeAnswer{}, fmt.Errorf("cannot scrape url=%q: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	a := nativeAnswer{contentType: resp.Header.Get("Content-Type"), latency: time.Since(start), wire: int64(len(raw))}
	if err != nil {
		return a, fmt.Errorf("cannot read body of url=%q: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("cannot scrape url=%q: status %s", url, resp.Status)
	}
	if !inspect {
		return a, nil
	}
	var body io.Reader = bytes.NewReader(raw)
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return a, fmt.Errorf("cannot read gzip body of url=%q: %w", url, err)
		}
		defer zr.Close()
		body = zr
	}
	cr := &harness.CountingReader{R: body}
	a.body = &inflatedBody{}
	if a.matches(solo.FormatProtobuf) {
		if a.body.proto, err = protoStats(cr); err != nil {
			return a, fmt.Errorf("cannot decode the protobuf body of url=%q: %w", url, err)
		}
	} else if _, err := io.Copy(io.Discard, cr); err != nil {
		return a, fmt.Errorf("cannot inflate body of url=%q: %w", url, err)
	}
	a.body.bytes = cr.N
	return a, nil
}

// protoStats decodes a delimited protobuf exposition and counts what it holds.
func protoStats(r io.Reader) (*solo.ProtoBodyStats, error) {
	dec := expfmt.NewDecoder(r, expfmt.NewFormat(expfmt.TypeProtoDelim))
	st := &solo.ProtoBodyStats{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			if errors.Is(err, io.EOF) {
				return st, nil
			}
			return st, err
		}
		st.Families++
		for _, m := range mf.GetMetric() {
			st.Metrics++
			if c := m.GetCounter(); c != nil {
				if c.GetExemplar() != nil {
					st.Exemplars++
				}
				if c.GetCreatedTimestamp() != nil {
					st.CreatedTimestamps++
				}
			}
			h := m.GetHistogram()
			if h == nil {
				continue
			}
			if h.Schema != nil {
				st.NativeHistograms++
			} else {
				st.ClassicHistograms++
			}
			if h.GetCreatedTimestamp() != nil {
				st.CreatedTimestamps++
			}
			st.Exemplars += len(h.GetExemplars())
			for _, b := range h.GetBucket() {
				if b.GetExemplar() != nil {
					st.Exemplars++
				}
			}
		}
	}
}
