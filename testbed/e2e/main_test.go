// Package e2e runs the built bin/otelcol-red against real services (Kafka, Redis,
// Elasticsearch, Prometheus) and checks what comes out. Its tests carry the `integration` build
// tag; `make test` builds the binary first and runs them one package at a time.
package e2e

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
