package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// subRecordContext marks a record as sub-key sub of a hot key. It rides on
// kgo.Record.Context, which franz-go hands to the partitioner untouched and
// never writes to the wire, so the record key stays the plain service key.
type subRecordContext struct {
	context.Context
	sub int
}

// newPartitioner places a record on the partition the stock kafka exporter
// would pick for its key (sarama-compatible FNV-1a), and sub-key i of a hot
// key i partitions further along: the fan-out sub-keys of one key never
// collide on one partition while the topic has at least fanout partitions.
func newPartitioner() kgo.Partitioner {
	return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
		return partitionOf
	})
}

func partitionOf(r *kgo.Record, n int) int {
	p := int32(fnv32a(r.Key)) % int32(n)
	if p < 0 {
		p = -p
	}
	if sc, ok := r.Context.(*subRecordContext); ok {
		return (int(p) + sc.sub) % n
	}
	return int(p)
}

// fnv32a is the hash the stock exporter's sarama-compatible partitioner uses.
func fnv32a(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}
