package hash

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Len returns the number of entries.
func (x *Index) Len() int { return x.n }

func lookup(x *Index, h uint64) []uint32 {
	var ids []uint32
	p := x.Probe(h)
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		ids = append(ids, id)
	}
	return ids
}

func TestIndexAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var x Index
	ref := map[uint32]uint64{}
	// Few distinct hashes force collisions and long probe chains.
	for step := 0; step < 200000; step++ {
		id := uint32(r.IntN(5000))
		h := uint64(r.IntN(700)) * 0x9E3779B97F4A7C15
		if r.IntN(16) == 0 {
			h &= 0xff // cluster near the start of the table
		}
		if oh, ok := ref[id]; ok {
			require.True(t, x.Delete(oh, id))
			delete(ref, id)
			continue
		}
		x.Insert(h, id)
		ref[id] = h
	}
	require.Equal(t, len(ref), x.Len())
	for id, h := range ref {
		require.Contains(t, lookup(&x, h), id)
	}
	require.False(t, x.Delete(12345, 99999))
	for id, h := range ref {
		require.True(t, x.Delete(h, id))
	}
	require.Equal(t, 0, x.Len())
}

func TestEmptyIndex(t *testing.T) {
	var x Index
	require.Empty(t, lookup(&x, 1))
	require.False(t, x.Delete(1, 1))
}

func BenchmarkSum64(b *testing.B) {
	key := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab")
	b.SetBytes(int64(len(key)))
	for i := 0; i < b.N; i++ {
		key[0] = byte(i)
		_ = Sum64(key)
	}
}

// First names the slot a lookup starts at: the id stored there when its own hash sits in its
// home slot, 0 for an empty slot or an empty index.
func TestFirstIsTheLookupsStartingSlot(t *testing.T) {
	var x Index
	require.Zero(t, x.First(42), "empty index")
	x.Insert(3, 7)
	require.Equal(t, uint32(8), x.First(3))
	require.Equal(t, uint32(8), x.First(3+uint64(len(x.slots))), "same home slot, other hash")
	require.Zero(t, x.First(4))
	x.Insert(3, 9) // same home: stored one slot further
	require.Equal(t, uint32(8), x.First(3))
	require.Equal(t, uint32(10), x.First(4), "the slot after holds the displaced entry")
}
