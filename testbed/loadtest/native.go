package loadtest

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

// NativeFormat is one way of scraping a side of the native probe.
type NativeFormat string

const (
	// FormatProtobuf asks as Prometheus 3 with native histograms does; the answer must be protobuf.
	FormatProtobuf NativeFormat = "protobuf"
	// FormatText asks as the other scrapes of the testbed do (Prometheus 2's header); the answer is
	// text 0.0.4 from a collector without OpenMetrics.
	FormatText NativeFormat = "text"
)

func (f NativeFormat) accept() string {
	if f == FormatProtobuf {
		return prometheus3NativeAccept
	}
	return prometheusAccept
}

// nativeFormats are the formats each side of the native probe is scraped in: the exponential
// sides as Prometheus 3 with native histograms scrapes, the classic side as a text scraper does.
var nativeFormats = map[string][]NativeFormat{
	"ours":         {FormatProtobuf},
	"stock":        {FormatProtobuf},
	"ours-classic": {FormatText},
}

// NativeRun is what the native probe measured of one side beyond its load phase.
type NativeRun struct {
	// RSSIdleMiB is the RSS after start-up, before any load; RSSSettledMiB the RSS once the load
	// ended and its last flush was rendered, before any scrape. Their difference over the series is
	// the memory per series.
	RSSIdleMiB    float64 `json:"rss_idle_mib"`
	RSSSettledMiB float64 `json:"rss_settled_mib"`
	// Scrapes are the timed scrapes, one entry per format.
	Scrapes []NativeScrapes `json:"scrapes"`
}

// BytesPerSeries is the RSS growth from idle to settled per RED series.
func (n *NativeRun) BytesPerSeries(series int) float64 {
	if n == nil || series == 0 || n.RSSSettledMiB == 0 {
		return 0
	}
	return (n.RSSSettledMiB - n.RSSIdleMiB) * (1 << 20) / float64(series)
}

// NativeScrapes are the timed scrapes of one side in one format.
type NativeScrapes struct {
	Format NativeFormat `json:"format"`
	// ContentType is the last answer's.
	ContentType string `json:"content_type"`
	OK          int    `json:"ok"`
	// Latencies run from the request to the last byte of the gzip body, in ms.
	Latencies []Millis `json:"latencies_ms"`
	P50       Millis   `json:"p50_ms"`
	Max       Millis   `json:"max_ms"`
	// WireBytes is the last body as transferred (gzip), BodyBytes the same inflated.
	WireBytes int64 `json:"wire_bytes"`
	BodyBytes int64 `json:"body_bytes"`
	// Body is what the last protobuf body holds (families, histograms by kind, exemplars); nil for
	// text.
	Body *ProtoBodyStats `json:"body,omitempty"`
	// RSSMaxMiB is the side's largest RSS reading while it was scraped in this format.
	RSSMaxMiB float64 `json:"rss_max_mib"`
	Error     string  `json:"error,omitempty"`
}

// ProtoBodyStats counts what a protobuf exposition holds.
type ProtoBodyStats struct {
	Families int `json:"families"`
	Metrics  int `json:"metrics"`
	// NativeHistograms have a schema; ClassicHistograms have buckets and no schema.
	NativeHistograms  int `json:"native_histograms"`
	ClassicHistograms int `json:"classic_histograms"`
	Exemplars         int `json:"exemplars"`
	CreatedTimestamps int `json:"created_timestamps"`
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
func runNative(ctx context.Context, p Probe, pc ProbeCollectors, pools *Pools, o Options, res *ProbeResult) error {
	return eachSideOnPool(ctx, p, pc, pools, res, func(c Collector, pool *Pool, run *ProbeRun) error {
		return nativeRun(ctx, p, c, pool, o, run)
	})
}

func nativeRun(ctx context.Context, p Probe, c Collector, pool *Pool, o Options, run *ProbeRun) error {
	formats, ok := nativeFormats[c.Name]
	if !ok {
		return fmt.Errorf("the native probe has no scrape format for side %q", c.Name)
	}
	s, err := startSolo(ctx, c, o, p.Name+"-"+c.Name, probeEnv(p), p.pinned())
	if err != nil {
		return err
	}
	nr := &NativeRun{}
	run.Native = nr
	// A few readings of the started, empty collector.
	if !wait(ctx, s, 3*time.Second) {
		return finishRun(s, run)
	}
	nr.RSSIdleMiB = lastRSS(s.watch.Samples())
	l, err := startLoad(pool, s, o.Concurrency)
	if err != nil {
		return errors.Join(err, finishRun(s, run))
	}
	measured := wait(ctx, s, p.Warmup)
	if measured {
		var phase Phase
		phase, measured = measurePhase(ctx, s, l, "load", p.Window, nil)
		run.Phases = append(run.Phases, phase)
	}
	l.end()
	// The last interval's flush and its render, then the memory figure.
	if !measured || !wait(ctx, s, o.FlushInterval+5*time.Second) {
		return finishRun(s, run)
	}
	nr.RSSSettledMiB = lastRSS(s.watch.Samples())
	client := &http.Client{Timeout: nativeScrapeTimeout, Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	for _, f := range formats {
		from := time.Since(s.watch.start)
		sc := scrapeNative(ctx, client, s.ep.metricsURL(), f, p.TimedScrapes)
		sc.RSSMaxMiB, _ = rssBetween(s.watch.Samples(), from.Seconds(), time.Since(s.watch.start).Seconds()+1)
		nr.Scrapes = append(nr.Scrapes, sc)
	}
	return finishRun(s, run)
}

// lastRSS is the last reading's RSS, 0 without readings.
func lastRSS(samples []Sample) float64 {
	if len(samples) == 0 {
		return 0
	}
	return samples[len(samples)-1].RSSMiB
}

// scrapeNative waits until url answers in format f, then scrapes it n times, each scrape starting
// nativeScrapeSpacing after the previous one (the one that found the format included) or as soon
// as it ended when it took longer, and inflates (and, for protobuf, decodes) the last body.
func scrapeNative(ctx context.Context, client *http.Client, url string, f NativeFormat, n int) NativeScrapes {
	out := NativeScrapes{Format: f}
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
		out.Latencies = append(out.Latencies, ToMillis(got.latency))
		out.WireBytes, out.ContentType = got.wire, got.contentType
		if got.body != nil {
			out.BodyBytes = got.body.bytes
			out.Body = got.body.proto
		}
	}
	slices.Sort(lat)
	out.P50 = ToMillis(nearestRank(lat, 50))
	if len(lat) > 0 {
		out.Max = ToMillis(lat[len(lat)-1])
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

func (a nativeAnswer) matches(f NativeFormat) bool {
	return (f == FormatProtobuf) == strings.HasPrefix(a.contentType, protoContentType)
}

type inflatedBody struct {
	bytes int64
	proto *ProtoBodyStats
}

// getNative scrapes url once with gzip, timing it to the last compressed byte; with inspect it
// then inflates the body and decodes it when it is protobuf.
func getNative(ctx context.Context, client *http.Client, url string, f NativeFormat, inspect bool) (nativeAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nativeAnswer{}, err
	}
	req.Header.Set("Accept", f.accept())
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
	cr := &countingReader{r: body}
	a.body = &inflatedBody{}
	if a.matches(FormatProtobuf) {
		if a.body.proto, err = protoStats(cr); err != nil {
			return a, fmt.Errorf("cannot decode the protobuf body of url=%q: %w", url, err)
		}
	} else if _, err := io.Copy(io.Discard, cr); err != nil {
		return a, fmt.Errorf("cannot inflate body of url=%q: %w", url, err)
	}
	a.body.bytes = cr.n
	return a, nil
}

// protoStats decodes a delimited protobuf exposition and counts what it holds.
func protoStats(r io.Reader) (*ProtoBodyStats, error) {
	dec := expfmt.NewDecoder(r, expfmt.NewFormat(expfmt.TypeProtoDelim))
	st := &ProtoBodyStats{}
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
