//go:build otelcolred_deps

// Package tools keeps the testbed's shared modules in go.mod while scenarios and
// end-to-end tests are added one by one.
package tools

import (
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/testbed/testbed"
	_ "github.com/otelcol-red/otelcol-red/internal/testservice"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/redis/go-redis/extra/redisotel/v9"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/stretchr/testify/require"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.uber.org/goleak"
	_ "gonum.org/v1/plot"
)
