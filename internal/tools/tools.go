//go:build otelcolred_deps

// Package tools keeps modules that the components and their tests share in go.mod,
// so that `go mod tidy` is stable while components are added one by one.
package tools

import (
	_ "github.com/Workiva/go-datastructures/queue"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/connector/spanmetricsconnector"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusexporter"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/contexts/ottlspan"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/ottlfuncs"
	_ "github.com/open-telemetry/opentelemetry-collector-contrib/processor/filterprocessor"
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/prometheus/otlptranslator"
	_ "github.com/stretchr/testify/require"
	_ "go.opentelemetry.io/collector/component"
	_ "go.opentelemetry.io/collector/component/componenttest"
	_ "go.opentelemetry.io/collector/config/confighttp"
	_ "go.opentelemetry.io/collector/confmap"
	_ "go.opentelemetry.io/collector/confmap/xconfmap"
	_ "go.opentelemetry.io/collector/connector"
	_ "go.opentelemetry.io/collector/connector/connectortest"
	_ "go.opentelemetry.io/collector/consumer"
	_ "go.opentelemetry.io/collector/consumer/consumertest"
	_ "go.opentelemetry.io/collector/exporter"
	_ "go.opentelemetry.io/collector/exporter/exportertest"
	_ "go.opentelemetry.io/collector/pdata/ptrace"
	_ "go.opentelemetry.io/collector/pipeline"
	_ "go.opentelemetry.io/collector/processor/processortest"
	_ "go.uber.org/goleak"
)
