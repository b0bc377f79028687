package kafkaaffinity

import (
	"context"
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestPartitionMatchesStockHash(t *testing.T) {
	stock := kgo.SaramaCompatHasher(func(b []byte) uint32 {
		h := fnv.New32a()
		_, _ = h.Write(b)
		return h.Sum32()
	})
	for _, key := range []string{"checkout", "cart", "_unkeyed", "shop|payment", ""} {
		for _, n := range []int{1, 3, 12, 64} {
			assert.Equal(t, stock([]byte(key), n), partitionOf(&kgo.Record{Key: []byte(key)}, n), "%s/%d", key, n)
		}
	}
}

func TestSubKeysTakeDistinctPartitions(t *testing.T) {
	const n, fanout = 12, 5
	seen := map[int]bool{}
	for sub := 0; sub < fanout; sub++ {
		r := &kgo.Record{Key: []byte("checkout"), Context: &subRecordContext{Context: context.Background(), sub: sub}}
		p := partitionOf(r, n)
		assert.GreaterOrEqual(t, p, 0)
		assert.Less(t, p, n)
		seen[p] = true
	}
	assert.Len(t, seen, fanout)
}
