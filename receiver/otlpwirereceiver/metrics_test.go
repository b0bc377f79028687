package otlpwirereceiver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
	"github.com/otelcol-red/otelcol-red/receiver/otlpwirereceiver/internal/metadatatest"
)

// TestRefusedRequestsMetric spells out the exported name (otelcol_receiver_otlpwire_refused_requests,
// checked by the generated assertion) and its attributes, one data point per reason and transport.
func TestRefusedRequestsMetric(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	rt, err := newTelemetry(tel.NewTelemetrySettings())
	require.NoError(t, err)
	defer rt.shutdown()

	ctx := context.Background()
	malformed := &otlpwire.DecodeError{Kind: otlpwire.ErrMalformed}
	rt.recordRefused(ctx, transportGRPC, malformed)
	rt.recordRefused(ctx, transportGRPC, malformed)
	rt.recordRefused(ctx, transportGRPC, &otlpwire.DecodeError{Kind: otlpwire.ErrTooLarge})
	rt.recordRefused(ctx, transportHTTP, &otlpwire.DecodeError{Kind: otlpwire.ErrTooDeep})
	rt.recordRefused(ctx, transportHTTP, errors.New("a JSON body pdata refused"))

	point := func(reason, transport string, v int64) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{
			Attributes: attribute.NewSet(attribute.String("reason", reason), attribute.String("transport", transport)),
			Value:      v,
		}
	}
	metadatatest.AssertEqualReceiverOtlpwireRefusedRequests(t, tel, []metricdata.DataPoint[int64]{
		point("malformed", "grpc", 2),
		point("too_large", "grpc", 1),
		point("too_deep", "http", 1),
		point("malformed", "http", 1),
	}, metricdatatest.IgnoreTimestamp())
}
