package hash

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func lookup(x *Index, h uint64) []uint32 {
	var ids []uint32
	p := x.Probe(h)
	for id, ok := p.Next(); ok; id, ok = p.Next() {
		ids = append(ids, id)
	}
	return ids
}

// holds reports whether a lookup of h yields id.
func holds(x *Index, h uint64, id uint32) bool {
	p := x.Probe(h)
	for got, ok := p.Next(); ok; got, ok = p.Next() {
		if got == id {
			return true
		}
	}
	return false
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
// home slot, 0 for an empty slot or an empty index. The home slot comes from the hash's top
// 32 bits.
func TestFirstIsTheLookupsStartingSlot(t *testing.T) {
	var x Index
	require.Zero(t, x.First(42<<32), "empty index")
	x.Insert(3<<32, 7)
	require.Equal(t, uint32(8), x.First(3<<32))
	require.Equal(t, uint32(8), x.First(3<<32|0xffff), "the low 32 bits do not move the home slot")
	require.Equal(t, uint32(8), x.First((3+uint64(len(x.slots)))<<32), "same home slot, other tag")
	require.Zero(t, x.First(4<<32))
	x.Insert(3<<32, 9) // same home: stored one slot further
	require.Equal(t, uint32(8), x.First(3<<32))
	require.Equal(t, uint32(10), x.First(4<<32), "the slot after holds the displaced entry")
}

// TestIndexAgreesWithAMapThroughFit inserts and deletes ids at random, with hashes drawn from
// a small set so that tags collide and probe runs wrap around the table's end, fitting the
// table now and then, and checks every id is found under its hash, an id never inserted is
// not, the table is never over 3/4 full, and an emptied table shrinks to the minimum.
func TestIndexAgreesWithAMapThroughFit(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var x Index
		hashOf := map[uint32]uint64{}
		hashes := make([]uint64, 1+rng.IntN(200))
		for i := range hashes {
			hashes[i] = rng.Uint64()
		}
		next := uint32(0)
		for step := range 20_000 {
			if len(hashOf) == 0 || rng.IntN(100) < 55 {
				h := hashes[rng.IntN(len(hashes))]
				x.Insert(h, next)
				hashOf[next] = h
				next++
			} else {
				for id, h := range hashOf {
					require.True(t, x.Delete(h, id))
					delete(hashOf, id)
					break
				}
			}
			if step%97 == 0 {
				x.Fit()
			}
			require.Equal(t, len(hashOf), x.Len())
			if step%50 != 0 {
				continue
			}
			for id, h := range hashOf {
				if !holds(&x, h, id) {
					t.Fatalf("seed %d step %d: id %d lost", seed, step, id)
				}
			}
			require.False(t, holds(&x, hashes[0], next), "an id never inserted is found")
			require.LessOrEqual(t, 4*x.Len(), 3*len(x.slots), "over 3/4 full")
		}
		for id, h := range hashOf {
			require.True(t, x.Delete(h, id))
		}
		require.False(t, x.Delete(hashes[0], next), "not held")
		require.Zero(t, x.Len())
		for _, s := range x.slots {
			require.Zero(t, s.id1, "a slot left behind")
		}
		x.Fit()
		require.Len(t, x.slots, minSlots, "an empty table shrinks to the minimum")
		x.Reset()
		require.Nil(t, x.slots)
		require.Empty(t, lookup(&x, hashes[0]))
	}
}
