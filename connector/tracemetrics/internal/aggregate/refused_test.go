package aggregate

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Under its byte budget the refused table counts every series exactly, through growth and
// backward-shift deletions; at the budget it stops growing, and a series that keeps coming
// stays counted, exactly, while a flood of IDs seen once pushes only other IDs out.
func TestRefusedTableIsExactUnderItsBudgetAndBoundedAtIt(t *testing.T) {
	const window = int64(4)
	t.Run("under the budget", func(t *testing.T) {
		b := &refusedBudget{limit: 64 << 20}
		tab := refusedTable{budget: b}
		r := rand.New(rand.NewPCG(1, 2))
		want := map[uint64]uint32{}
		for range 200_000 {
			h := r.Uint64N(50_000) * 0x9e3779b97f4a7c15
			w := 1 + uint32(r.IntN(3))
			e := tab.sight(h, w, 0, window, 7)
			require.NotNil(t, e)
			want[h] += w
		}
		// Half leave (their series were created): deletion keeps the others reachable.
		n := 0
		for h := range want {
			if n%2 == 0 {
				tab.remove(h)
				delete(want, h)
			}
			n++
		}
		got := map[uint64]uint32{}
		tab.sweep(1, window, func(e *refusedEntry) { got[e.hash] = e.count })
		require.Equal(t, want, got)
		require.Equal(t, len(want), tab.n)
		require.LessOrEqual(t, b.used, b.limit)
	})
	t.Run("at the budget", func(t *testing.T) {
		b := &refusedBudget{limit: 4 * minRefusedSlots * refusedEntryBytes}
		tab := refusedTable{budget: b}
		busy := make([]uint64, 100)
		for i := range busy {
			busy[i] = uint64(i+1) * 0x9e3779b97f4a7c15
		}
		id := uint64(1 << 40)
		for round := range 200 {
			for _, h := range busy {
				require.NotNil(t, tab.sight(h, 1, 0, window, 1), "round %d: a busy series is counted", round)
			}
			for range 500 { // IDs seen once
				tab.sight(id*0x9e3779b97f4a7c15, 1, 0, window, 1)
				id++
			}
			require.LessOrEqual(t, b.used, b.limit, "the budget bounds the table")
		}
		got := map[uint64]uint32{}
		tab.sweep(1, window, func(e *refusedEntry) { got[e.hash] = e.count })
		for _, h := range busy {
			require.EqualValues(t, 200, got[h], "a busy series is counted exactly")
		}
		require.Equal(t, 4*minRefusedSlots, len(tab.slots))
	})
	t.Run("entries age out", func(t *testing.T) {
		b := &refusedBudget{limit: 1 << 20}
		tab := refusedTable{budget: b}
		for i := range 3000 {
			tab.sight(uint64(i+1)*0x9e3779b97f4a7c15, 1, 0, window, 1)
		}
		tab.sweep(1, window, func(*refusedEntry) {})
		require.Equal(t, 3000, tab.n)
		tab.sweep(window+1, window, func(*refusedEntry) { t.Fatal("no entry received spans") })
		require.Zero(t, tab.n)
		tab.sweep(window+2, window, func(*refusedEntry) {})
		require.LessOrEqual(t, b.used, minRefusedSlots*refusedEntryBytes, "memory given back")
	})
}
