//go:build otelcolred_deps

// Package tools keeps in go.mod the modules that only build-tagged tests import.
package tools

import (
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
