package solo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProbeRunLabel(t *testing.T) {
	assert.Equal(t, "ours (1000 series)", ProbeRun{Collector: "ours", Series: 1000}.Label())
	assert.Equal(t, "floor (100000 series, round 3)", ProbeRun{Collector: "floor", Series: 100_000, Round: 3}.Label())
}
