package cachedprom

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIDTableAgreesWithAMap inserts and removes ids at random, with hashes
// drawn from a small set so that tags collide and probe runs wrap around
// the table's end, and checks every id is found under its hash after each
// step, and nothing else, and that the table shrinks once emptied.
func TestIDTableAgreesWithAMap(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var tab idTable
		hashOf := map[uint32]uint64{}
		// Few distinct hashes: many ids share a tag, and ids share home slots.
		hashes := make([]uint64, 1+rng.IntN(200))
		for i := range hashes {
			hashes[i] = rng.Uint64()
		}
		next := uint32(0)
		for step := range 20_000 {
			if len(hashOf) == 0 || rng.IntN(100) < 55 {
				h := hashes[rng.IntN(len(hashes))]
				tab.insert(h, next)
				hashOf[next] = h
				next++
			} else {
				for id, h := range hashOf {
					tab.remove(h, id)
					delete(hashOf, id)
					break
				}
			}
			if step%97 == 0 {
				tab.fit()
			}
			require.Equal(t, len(hashOf), tab.n)
			if step%50 != 0 {
				continue
			}
			for id, h := range hashOf {
				got, ok := tab.find(h, func(c uint32) bool { return c == id })
				require.True(t, ok, "seed %d step %d: id %d lost", seed, step, id)
				require.Equal(t, id, got)
			}
			_, ok := tab.find(hashes[0], func(c uint32) bool { return c == next })
			require.False(t, ok, "an id never inserted is found")
			require.LessOrEqual(t, 4*tab.n, 3*len(tab.slots), "over 3/4 full")
		}
		for id, h := range hashOf {
			tab.remove(h, id)
		}
		tab.remove(hashes[0], next) // not held: nothing happens
		require.Zero(t, tab.n)
		for _, s := range tab.slots {
			require.Zero(t, s.id, "a slot left behind")
		}
		tab.fit()
		require.Len(t, tab.slots, idTableMin, "an empty table shrinks to the minimum")
	}
}
