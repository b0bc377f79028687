package native

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness/solo"
)

// protoBody encodes families as a delimited protobuf exposition.
func protoBody(t *testing.T, fams ...*dto.MetricFamily) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for _, mf := range fams {
		require.NoError(t, enc.Encode(mf))
	}
	return buf.Bytes()
}

func nativeFamilies() []*dto.MetricFamily {
	ex := &dto.Exemplar{Value: proto.Float64(1), Timestamp: timestamppb.New(time.Unix(1, 0))}
	return []*dto.MetricFamily{
		{Name: proto.String("calls_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			{Counter: &dto.Counter{Value: proto.Float64(3), Exemplar: ex, CreatedTimestamp: timestamppb.New(time.Unix(1, 0))}},
		}},
		{Name: proto.String("duration"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{
			{Histogram: &dto.Histogram{SampleCount: proto.Uint64(2), SampleSum: proto.Float64(1), Schema: proto.Int32(2),
				ZeroThreshold: proto.Float64(1e-128), PositiveSpan: []*dto.BucketSpan{{Offset: proto.Int32(0), Length: proto.Uint32(1)}},
				PositiveDelta: []int64{2}, Exemplars: []*dto.Exemplar{ex, ex}}},
			{Histogram: &dto.Histogram{SampleCount: proto.Uint64(2), SampleSum: proto.Float64(1), Schema: proto.Int32(0),
				ZeroThreshold: proto.Float64(1e-128), ZeroCount: proto.Uint64(2)}},
			{Histogram: &dto.Histogram{SampleCount: proto.Uint64(2), SampleSum: proto.Float64(1),
				Bucket: []*dto.Bucket{{CumulativeCount: proto.Uint64(2), UpperBound: proto.Float64(1), Exemplar: ex}}}},
		}},
	}
}

func TestProtoStats(t *testing.T) {
	st, err := protoStats(bytes.NewReader(protoBody(t, nativeFamilies()...)))
	require.NoError(t, err)
	assert.Equal(t, solo.ProtoBodyStats{Families: 2, Metrics: 4, NativeHistograms: 2, ClassicHistograms: 1, Exemplars: 4, CreatedTimestamps: 1}, *st)

	_, err = protoStats(strings.NewReader("not a protobuf body"))
	assert.Error(t, err)
}

// nativeServer answers like ours does: text to the first protobuf scrape (no protobuf body rendered
// yet), protobuf from then on; text to every other client.
func nativeServer(t *testing.T) *httptest.Server {
	t.Helper()
	pb := protoBody(t, nativeFamilies()...)
	asked := false
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ct := []byte("calls_total 3\n"), "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"
		if strings.HasPrefix(r.Header.Get("Accept"), protoContentType) {
			if asked {
				body, ct = pb, "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores"
			}
			asked = true
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(body)
		_ = zw.Close()
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gz.Bytes())
	}))
}

func TestScrapeNative(t *testing.T) {
	srv := nativeServer(t)
	defer srv.Close()
	client := srv.Client()

	sc := scrapeNative(context.Background(), client, srv.URL, solo.FormatProtobuf, 3)
	require.Empty(t, sc.Error)
	assert.Equal(t, 3, sc.OK, "the text answer before the protobuf body is not timed")
	assert.Len(t, sc.Latencies, 3)
	assert.Equal(t, "protobuf (delimited)", shortContentType(sc.ContentType))
	require.NotNil(t, sc.Body)
	assert.Equal(t, 2, sc.Body.NativeHistograms)
	assert.Equal(t, int64(len(protoBody(t, nativeFamilies()...))), sc.BodyBytes)
	assert.Positive(t, sc.WireBytes)
	assert.LessOrEqual(t, sc.P50, sc.Max)

	sc = scrapeNative(context.Background(), client, srv.URL, solo.FormatText, 2)
	require.Empty(t, sc.Error)
	assert.Equal(t, 2, sc.OK)
	assert.Nil(t, sc.Body)
	assert.Equal(t, int64(len("calls_total 3\n")), sc.BodyBytes)
	assert.Equal(t, "text/plain 0.0.4", shortContentType(sc.ContentType))
}

func TestScrapeNativeFailsOnAnotherFormat(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited")
		_, _ = w.Write(protoBody(t, nativeFamilies()...))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	sc := scrapeNative(ctx, srv.Client(), srv.URL, solo.FormatText, 2)
	assert.NotEmpty(t, sc.Error, "a protobuf answer to a text scrape is not timed as text")
	assert.Zero(t, sc.OK)
}
