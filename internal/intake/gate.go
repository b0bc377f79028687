package intake // import "github.com/otelcol-red/otelcol-red/internal/intake"

import (
	"context"
	"sync"
	"sync/atomic"
)

// closedBit marks a closed Gate in its state word; the low bits count callers inside.
const closedBit = int64(1) << 62

// Gate admits producers until it is closed, and lets the closer wait until every admitted
// producer has left. Enter and Exit are one atomic add each: no lock on the producer path.
type Gate struct {
	state    atomic.Int64
	once     sync.Once
	drained  chan struct{}
	initOnce sync.Once
}

func (g *Gate) init() { g.initOnce.Do(func() { g.drained = make(chan struct{}) }) }

// Enter admits a caller; it returns false once the gate is closed. A caller admitted must call Exit.
func (g *Gate) Enter() bool {
	if g.state.Add(1)&closedBit != 0 {
		g.Exit()
		return false
	}
	return true
}

// Exit leaves the gate.
func (g *Gate) Exit() {
	if g.state.Add(-1) == closedBit {
		g.init()
		g.once.Do(func() { close(g.drained) })
	}
}

// Close refuses new callers and waits until the admitted ones have left, or ctx is done.
func (g *Gate) Close(ctx context.Context) error {
	g.init()
	if g.state.Or(closedBit)&^closedBit == 0 {
		g.once.Do(func() { close(g.drained) })
	}
	select {
	case <-g.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
