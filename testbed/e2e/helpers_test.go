package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/freeport"
	"github.com/otelcol-red/otelcol-red/internal/testservice"
)

// readyLine is what the collector logs once every pipeline has started.
const readyLine = "Everything is ready. Begin running and processing data."

// binaryPath is the collector under test; `make build` produces it.
func binaryPath(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join(testservice.Root(), "bin", "otelcol-red")
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s is missing: run `make build` first (make test does): %v", p, err)
	}
	return p
}

// overlayFiles writes each YAML overlay to a file of the test's temp dir, for StartCollector's
// extraConfigs (merged over the shipped config in order).
func overlayFiles(tb testing.TB, overlays ...string) []string {
	tb.Helper()
	dir := tb.TempDir()
	files := make([]string, len(overlays))
	for i, o := range overlays {
		files[i] = filepath.Join(dir, fmt.Sprintf("overlay-%d.yaml", i))
		if err := os.WriteFile(files[i], []byte(o), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return files
}

// configPath returns the path of a file in the repository's configs/ folder.
func configPath(name string) string {
	return filepath.Join(testservice.Root(), "configs", name)
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago, from below the
// ephemeral range so that no client's connect takes it before the collector binds it.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	addr, err := freeport.Addr()
	if err != nil {
		tb.Fatalf("cannot find a free port: %v", err)
	}
	return addr
}

// portOf returns the port of a host:port address.
func portOf(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// syncBuffer collects a child's output while tests read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Collector is a running bin/otelcol-red child process.
type Collector struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
	err  error
}

// StartCollector runs the binary with --config=configFile and the given extra environment
// (config files read endpoints from ${env:...}), waits until it logs readiness, and stops it
// when the test ends. extraConfigs are merged over configFile in order (the collector merges
// several --config files), so a test can change one part of a shipped config and keep the rest.
// A collector that exits or does not get ready in time fails the test with its log.
func StartCollector(tb testing.TB, configFile string, env map[string]string, extraConfigs ...string) *Collector {
	tb.Helper()
	args := []string{"--config=" + configFile}
	for _, c := range extraConfigs {
		args = append(args, "--config="+c)
	}
	cmd := exec.Command(binaryPath(tb), args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	c := &Collector{cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout = c.logs
	cmd.Stderr = c.logs
	if err := cmd.Start(); err != nil {
		tb.Fatalf("cannot start %s: %v", cmd.Path, err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	tb.Cleanup(func() {
		c.Stop(tb)
		if tb.Failed() {
			// Only the tail: a failing test with several collectors must not bury its own
			// assertion, which was printed before these, under their logs.
			tb.Logf("collector log (%s), tail:\n%s", filepath.Base(configFile), tailOf(c.Logs(), 3000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(c.Logs(), readyLine) {
		select {
		case <-c.done:
			tb.Fatalf("collector exited before it was ready (%v):\n%s", c.err, tailOf(c.Logs(), 8000))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("collector not ready after 60s:\n%s", tailOf(c.Logs(), 8000))
		}
	}
	return c
}

// Logs returns everything the collector wrote so far.
func (c *Collector) Logs() string { return c.logs.String() }

// Stop sends SIGTERM (a graceful shutdown with final flushes) and waits up to 60 s before killing.
// It returns the process' exit error, nil for a clean exit. Stopping twice is harmless.
func (c *Collector) Stop(tb testing.TB) error {
	tb.Helper()
	select {
	case <-c.done:
		return c.err
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		tb.Errorf("collector did not stop within 60s of SIGTERM")
	}
	return c.err
}

// Kill ends the collector at once, without a graceful shutdown (a crash).
func (c *Collector) Kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// Scrape GETs a Prometheus endpoint (accepting gzip) and parses the text exposition.
func Scrape(tb testing.TB, url string) map[string]*dto.MetricFamily {
	tb.Helper()
	fams, err := scrape(url)
	if err != nil {
		tb.Fatalf("scrape %s: %v", url, err)
	}
	return fams
}

func scrape(url string) (map[string]*dto.MetricFamily, error) {
	var fams map[string]*dto.MetricFamily
	err := readScrape(url, 30*time.Second, func(body io.Reader) error {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		var err error
		fams, err = parser.TextToMetricFamilies(body)
		return err
	})
	return fams, err
}

// readScrape GETs a Prometheus endpoint in the text format, accepting gzip, and hands read the
// decoded page.
func readScrape(url string, timeout time.Duration, read func(io.Reader) error) error {
	req, err := http.NewRequest(http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	req.Header.Set("Accept-Encoding", "gzip")
	// A transport of its own so no idle connection outlives the test (goleak).
	tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: timeout}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("status %d: %s", resp.StatusCode, tailOf(string(b), 500))
	}
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return err
		}
		defer zr.Close()
		body = zr
	}
	return read(body)
}

// scrapeFamilyLines GETs a Prometheus endpoint (accepting gzip) and returns the value of each
// series of one counter or gauge family, keyed by the text of its label set. It reads the page
// line by line and skips every other family, so that a loop scraping a large page still sees
// each flush.
func scrapeFamilyLines(url, family string, timeout time.Duration) (map[string]float64, error) {
	seen := map[string]float64{}
	err := readScrape(url, timeout, func(body io.Reader) error { return readFamilyLines(body, family, seen) })
	return seen, err
}

// readFamilyLines adds to seen the value of each series of family on the page body.
func readFamilyLines(body io.Reader, family string, seen map[string]float64) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := []byte(family + "{")
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, prefix) {
			continue
		}
		end := bytes.LastIndexByte(line, '}')
		if end < 0 {
			return fmt.Errorf("%s line without its label set: %q", family, line)
		}
		fields := strings.Fields(string(line[end+1:]))
		if len(fields) == 0 {
			return fmt.Errorf("%s line without a value: %q", family, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return fmt.Errorf("%s line %q: %w", family, line, err)
		}
		seen[string(line[len(prefix):end])] = v
	}
	return sc.Err()
}

// SumSeries adds the values of every series of family whose labels include all of want.
// Counters, gauges and untyped values count as they are; histograms count their sample count, so
// the duration histogram's count can be checked against calls. It returns how many series matched.
func SumSeries(fams map[string]*dto.MetricFamily, family string, want map[string]string) (float64, int) {
	f, ok := fams[family]
	if !ok {
		return 0, 0
	}
	var sum float64
	n := 0
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		n++
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, n
}

// WaitForSum scrapes url until SumSeries(family, want) equals expected or timeout passes, and
// returns the last sum seen. Tests assert on the returned value so a shortfall shows the number.
func WaitForSum(tb testing.TB, url, family string, want map[string]string, expected float64, timeout time.Duration) float64 {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	last := -1.0
	for {
		if fams, err := scrape(url); err == nil {
			last, _ = SumSeries(fams, family, want)
			if last == expected {
				return last
			}
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func itoa(i int) string { return strconv.Itoa(i) }

// checkoutTrace is the smallest trace with every RED dimension in it: service "checkout" with two
// "GET /cart" spans (unset status, 10 and 20 ms) and one "POST /pay" (error, 30 ms). idByte keeps
// the IDs of different tests apart.
func checkoutTrace(idByte byte) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	ss := rs.ScopeSpans().AppendEmpty()
	now := time.Now()
	for i, name := range []string{"GET /cart", "GET /cart", "POST /pay"} {
		s := ss.Spans().AppendEmpty()
		s.SetName(name)
		s.SetKind(ptrace.SpanKindServer)
		s.SetTraceID(pcommon.TraceID{idByte, 2, 3, byte(i)})
		s.SetSpanID(pcommon.SpanID{idByte, 5, byte(i + 1)})
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-time.Duration(i+1) * 10 * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		if name == "POST /pay" {
			s.Status().SetCode(ptrace.StatusCodeError)
		}
	}
	return td
}
