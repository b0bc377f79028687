package cachedprom // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom"

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/render"
)

// handler serves scrapes from the published snapshot: negotiation, headers
// and one Write. Nothing here depends on the number of series.
type handler struct {
	exp *cachedExporter
	// inflight holds a token per scrape being served; nil means no limit
	// (max_concurrent_scrapes 0).
	inflight chan struct{}
	// inflating holds the token of the one scrape that decompresses a body
	// too large to keep. Each such scrape costs CPU in proportion to the
	// series (the whole text is inflated again), so a few clients looping
	// without gzip would take every core from ingest; one at a time bounds
	// them whatever max_concurrent_scrapes allows. Prometheus
	// always asks for gzip and never needs it.
	inflating chan struct{}
	// pacer spaces the scrapes of one client; nil when
	// min_scrape_interval is 0.
	pacer *pacer
}

func newHandler(e *cachedExporter) *handler {
	h := &handler{exp: e, inflating: make(chan struct{}, 1)}
	if n := e.cfg.MaxConcurrentScrapes; n > 0 {
		h.inflight = make(chan struct{}, n)
	}
	if d := e.cfg.MinScrapeInterval; d > 0 {
		h.pacer = newPacer(d, e.clock)
	}
	return h
}

var (
	// The content types promhttp sends for the same negotiation: the stock
	// exporter serves names escaped with underscores to clients that do not
	// ask otherwise, and so do we.
	escapingSuffix    = "; escaping=" + model.UnderscoreEscaping.String()
	contentTypeText   = string(expfmt.NewFormat(expfmt.TypeTextPlain)) + escapingSuffix
	contentTypeOM100  = string(expfmt.FmtOpenMetrics_1_0_0) + escapingSuffix
	contentTypeOM001  = string(expfmt.FmtOpenMetrics_0_0_1) + escapingSuffix
	contentTypeProto  = string(expfmt.NewFormat(expfmt.TypeProtoDelim)) + escapingSuffix
	emptyOpenMetrics  = []byte("# EOF\n")
	emptySnapshotETag = `"empty"`
)

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// Pace before taking an in-flight token: a client waiting for its turn
	// must not keep another one from being served.
	if h.pacer != nil && r.Method == http.MethodGet && !h.pace(w, r) {
		return
	}
	if h.inflight != nil {
		select {
		case h.inflight <- struct{}{}:
			defer func() { <-h.inflight }()
		default:
			// As promhttp: refuse at once rather than queue, so a flood of
			// scrapes costs nothing but this answer.
			h.exp.telemetry.scrapesRefused.Add(1)
			http.Error(w, "limit of concurrent scrapes reached ("+strconv.Itoa(cap(h.inflight))+"), try again later", http.StatusServiceUnavailable)
			return
		}
	}
	snap := h.exp.acquire()
	if snap == nil {
		h.exp.waitFirstRender(r)
		snap = h.exp.acquire()
	}
	if snap != nil {
		defer snap.Release()
	}
	h.exp.telemetry.scrapes.Add(1)

	contentType, which := contentTypeText, render.BodyText
	var f expfmt.Format
	if h.exp.cfg.EnableOpenMetrics {
		f = expfmt.NegotiateIncludingOpenMetrics(r.Header)
	} else {
		f = expfmt.Negotiate(r.Header)
	}
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	switch f.FormatType() {
	case expfmt.TypeOpenMetrics:
		which = render.BodyOpenMetrics
		contentType = contentTypeOM001
		if strings.Contains(string(f), "version="+expfmt.OpenMetricsVersion_1_0_0) {
			contentType = contentTypeOM100
		}
	case expfmt.TypeProtoDelim:
		// The protobuf body is rendered only while protobuf clients are
		// around. Until a render has it, the client gets text, which the
		// Content-Type says and every Prometheus takes.
		if h.exp.wantProto(!gz, snap) {
			which, contentType = render.BodyProto, contentTypeProto
		}
	}
	// The protobuf text formats (encoding=text, compact-text) get text too.

	var body, gzBody []byte
	var kept bool
	var length int
	variant, etagPrefix := byte('t'), ""
	switch {
	case snap == nil && which == render.BodyOpenMetrics:
		body, kept, length = emptyOpenMetrics, true, len(emptyOpenMetrics)
	case snap == nil:
		kept = true
	default:
		b := snap.Body(which)
		body, gzBody, kept, length, etagPrefix = b.Plain, b.Gzip, b.Kept, b.Len, b.ETag
		switch which {
		case render.BodyOpenMetrics:
			variant = 'o'
		case render.BodyProto:
			variant = 'p'
		}
	}
	if gz && snap != nil {
		body, kept, length = gzBody, true, len(gzBody)
		variant -= 'a' - 'A'
	} else if snap != nil {
		// A body too large to keep is inflated for every identity client:
		// asking for a render would only repeat this.
		h.exp.identitySeen(which, kept || length > render.MaxKeptBody)
	}

	hdr := w.Header()
	hdr.Set("Content-Type", contentType)
	hdr.Set("Vary", "Accept, Accept-Encoding")
	if snap != nil {
		etag := etagPrefix + string(variant) + `"`
		hdr.Set("ETag", etag)
		if match := r.Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if gz {
			hdr.Set("Content-Encoding", "gzip")
		}
	} else {
		hdr.Set("ETag", emptySnapshotETag)
	}
	if !kept && r.Method == http.MethodGet {
		select {
		case h.inflating <- struct{}{}:
			// The slot stays taken for as long again as this inflation
			// took, as the renderer idles after a render: clients looping
			// without gzip get at most half a core.
			start := time.Now()
			defer func() { time.AfterFunc(time.Since(start), func() { <-h.inflating }) }()
		default:
			h.exp.telemetry.scrapesRefused.Add(1)
			hdr.Del("ETag")
			hdr.Set("Retry-After", "1")
			http.Error(w, "another client is being served this body uncompressed; ask with Accept-Encoding: gzip, or try again later", http.StatusServiceUnavailable)
			return
		}
	}
	hdr.Set("Content-Length", strconv.Itoa(length))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if kept {
		_, _ = w.Write(body)
		return
	}
	// Only the gzip form exists (no identity client was seen lately):
	// decompress it for this client; the next render keeps the body.
	zr, err := gzip.NewReader(bytes.NewReader(gzBody))
	if err != nil {
		panic("BUG: snapshot holds invalid gzip: " + err.Error())
	}
	_, _ = io.Copy(w, zr)
}

// pace waits for the client's turn. It reports false, having answered or
// with the client gone, when the scrape is not to be served.
func (h *handler) pace(w http.ResponseWriter, r *http.Request) bool {
	d, ok := h.pacer.reserve(clientAddr(r))
	if !ok {
		h.exp.telemetry.scrapesRefused.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(int(d.Round(time.Second)/time.Second)+1))
		http.Error(w, "this address already has "+strconv.Itoa(pacerMaxAhead)+" scrapes waiting for their turn (min_scrape_interval); try again later", http.StatusServiceUnavailable)
		return false
	}
	if d <= 0 {
		return true
	}
	h.exp.telemetry.scrapesPaced.Add(1)
	t := h.exp.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return true
	case <-r.Context().Done():
		return false
	case <-h.exp.done:
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return false
	}
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip (or *)
// with a non-zero quality.
func acceptsGzip(h string) bool {
	for h != "" {
		var part string
		part, h, _ = strings.Cut(h, ",")
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.TrimSpace(coding)
		if !strings.EqualFold(coding, "gzip") && coding != "*" {
			continue
		}
		q := strings.TrimSpace(params)
		if v, ok := strings.CutPrefix(q, "q="); ok {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && f == 0 {
				continue
			}
		}
		return true
	}
	return false
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
