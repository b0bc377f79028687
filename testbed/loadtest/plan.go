package loadtest

import "github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"

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
