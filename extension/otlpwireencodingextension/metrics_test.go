package otlpwireencodingextension

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-red/otelcol-red/extension/otlpwireencodingextension/internal/metadatatest"
	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// TestTelemetry spells out the exported names (otelcol_extension_otlpwire_encoding_spans and
// otelcol_extension_otlpwire_encoding_refused_messages, checked by the generated assertions)
// and their attributes.
func TestTelemetry(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	et, err := newTelemetry(tel.NewTelemetrySettings())
	require.NoError(t, err)
	defer et.shutdown()

	ctx := context.Background()
	et.recordSpans(ctx, 1000)
	et.recordSpans(ctx, 0)
	et.recordSpans(ctx, 7)
	et.recordRefused(ctx, &otlpwire.DecodeError{Kind: otlpwire.ErrMalformed})
	et.recordRefused(ctx, &otlpwire.DecodeError{Kind: otlpwire.ErrTooLarge})
	et.recordRefused(ctx, &otlpwire.DecodeError{Kind: otlpwire.ErrTooLarge})
	et.recordRefused(ctx, &otlpwire.DecodeError{Kind: otlpwire.ErrTooDeep})

	metadatatest.AssertEqualExtensionOtlpwireEncodingSpans(t, tel, []metricdata.DataPoint[int64]{{Value: 1007}},
		metricdatatest.IgnoreTimestamp())
	reason := func(r string, v int64) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{Attributes: attribute.NewSet(attribute.String("reason", r)), Value: v}
	}
	metadatatest.AssertEqualExtensionOtlpwireEncodingRefusedMessages(t, tel, []metricdata.DataPoint[int64]{
		reason("malformed", 1), reason("too_large", 2), reason("too_deep", 1),
	}, metricdatatest.IgnoreTimestamp())
}
