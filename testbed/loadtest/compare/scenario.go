// Package compare runs the comparison scenarios: ours and the stock twin side by side, at the
// same time on identical input (OTLP at a paced or the highest rate, or one Kafka backlog), and
// writes RESULTS.md with its charts.
package compare

import (
	"fmt"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Transport is how spans reach the collectors.
type Transport string

const (
	// TransportOTLP sends OTLP gRPC to each collector, the same requests at the same pace.
	TransportOTLP Transport = "otlp"
	// TransportKafka writes one backlog to a topic that each collector consumes in its own group.
	TransportKafka Transport = "kafka"
)

// Scenario is one load shape run on both collectors at once.
type Scenario struct {
	Name      string        `json:"name"`
	Transport Transport     `json:"transport"`
	Shape     harness.Shape `json:"shape"`
	// Rate is the target in spans/s per collector; 0 sends as fast as each collector acknowledges.
	Rate int `json:"rate"`
	// Backlog is the number of spans written to the topic before the collectors start (Kafka).
	Backlog int64 `json:"backlog,omitempty"`
}

// Title is the scenario as a table row names it.
func (s Scenario) Title() string {
	switch {
	case s.Transport == TransportKafka:
		return fmt.Sprintf("Kafka backlog of %s spans, %s", harness.HumanCount(float64(s.Backlog)), s.Shape)
	case s.Rate == 0:
		return fmt.Sprintf("OTLP max, %s", s.Shape)
	default:
		return fmt.Sprintf("OTLP %s spans/s, %s", harness.HumanCount(float64(s.Rate)), s.Shape)
	}
}

// FullPlan is the set `make testbed` runs: OTLP at 10k, 100k and max spans/s at both
// cardinalities, and a Kafka backlog.
func FullPlan(kafkaBacklog int64) []Scenario {
	return []Scenario{
		{Name: "otlp-10k-1k", Transport: TransportOTLP, Shape: harness.Shape1k, Rate: 10_000},
		{Name: "otlp-100k-1k", Transport: TransportOTLP, Shape: harness.Shape1k, Rate: 100_000},
		{Name: "otlp-max-1k", Transport: TransportOTLP, Shape: harness.Shape1k},
		{Name: "otlp-10k-100k", Transport: TransportOTLP, Shape: harness.Shape100k, Rate: 10_000},
		{Name: "otlp-100k-100k", Transport: TransportOTLP, Shape: harness.Shape100k, Rate: 100_000},
		{Name: "otlp-max-100k", Transport: TransportOTLP, Shape: harness.Shape100k},
		{Name: "kafka-1k", Transport: TransportKafka, Shape: harness.Shape1k, Backlog: kafkaBacklog},
	}
}

// ShortPlan is the CI subset. The 10k rates are left out because both distributions keep up with
// them easily, so they cost time without telling the two apart; at 100k series only the max rate
// stays, because every scenario at that cardinality spends a minute or more in scrapes of
// hundreds of MB after the load, and CI has 8 minutes in all.
func ShortPlan(kafkaBacklog int64) []Scenario {
	var out []Scenario
	for _, s := range FullPlan(kafkaBacklog) {
		if s.Transport == TransportOTLP && (s.Rate == 10_000 || s.Rate != 0 && s.Shape == harness.Shape100k) {
			continue
		}
		out = append(out, s)
	}
	return out
}
