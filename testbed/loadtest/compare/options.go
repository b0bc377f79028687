package compare

import (
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Options are the settings of a comparison run: those every mode shares, the two collectors of
// the OTLP and the Kafka scenarios, and the OTLP load window.
type Options struct {
	harness.Options
	Ours, Stock harness.Collector
	// OursKafka and StockKafka are the same binaries with their Kafka gateway configs.
	OursKafka, StockKafka harness.Collector
	// Duration is the load window of an OTLP scenario.
	Duration time.Duration
}
