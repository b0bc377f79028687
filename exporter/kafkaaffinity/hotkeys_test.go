package kafkaaffinity

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestHotKeys(t *testing.T) {
	h := newHotKeys(HotKeysConfig{
		SpansPerSecond: 100, Interval: time.Second, Fanout: 4, MaxTrackedKeys: 2,
		Keys: []StaticHotKey{{Key: "listed", Fanout: 6}},
	})
	assert.Equal(t, 6, h.observe([]byte("listed"), 1))
	assert.Equal(t, 1, h.observe([]byte("busy"), 150))
	assert.Equal(t, 1, h.observe([]byte("quiet"), 50))
	// A third key is past max_tracked_keys: sent normally, counted.
	assert.Equal(t, 1, h.observe([]byte("late"), 1000))
	assert.EqualValues(t, 1, h.untracked.Load())
	assert.Equal(t, 1, h.hotNow())

	h.tick(time.Second)
	assert.Equal(t, 4, h.observe([]byte("busy"), 1))
	assert.Equal(t, 1, h.observe([]byte("quiet"), 1))
	assert.Equal(t, 2, h.hotNow())

	// busy dropped below the rate; late is forgotten when unseen.
	h.tick(time.Second)
	assert.Equal(t, 1, h.observe([]byte("busy"), 1))
	assert.Equal(t, 1, h.hotNow())
	h.tick(time.Second)
	h.tick(time.Second)
	h.mu.RLock()
	assert.Empty(t, h.counts)
	h.mu.RUnlock()
}

func TestHotKeysDisabled(t *testing.T) {
	h := newHotKeys(HotKeysConfig{Interval: time.Second, Fanout: 4, MaxTrackedKeys: 10})
	assert.Equal(t, 1, h.observe([]byte("busy"), 1e9))
	h.tick(time.Second)
	assert.Equal(t, 1, h.observe([]byte("busy"), 1))
	assert.Empty(t, h.counts)
}
