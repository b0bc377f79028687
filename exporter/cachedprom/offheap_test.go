package cachedprom

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOffHeapBufferGrowsKeepsContentAndResets(t *testing.T) {
	var b offHeapBuffer
	var want bytes.Buffer
	piece := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	// Past several doublings of offHeapBufferMin.
	for want.Len() < 5*offHeapBufferMin {
		n, err := b.Write(piece)
		require.NoError(t, err)
		require.Equal(t, len(piece), n)
		want.Write(piece)
	}
	require.Equal(t, want.Bytes(), b.bytes())
	require.NotNil(t, b.chunk.mem, "large buffers are mapped outside the heap on this system")
	mapped := len(b.chunk.values)

	b.reset()
	assert.Empty(t, b.bytes())
	_, _ = b.Write([]byte("again"))
	assert.Equal(t, []byte("again"), b.bytes())
	assert.Equal(t, mapped, len(b.chunk.values), "reset keeps the mapping for the next content")

	b.free()
	assert.Empty(t, b.bytes())
	_, _ = b.Write([]byte("after free"))
	assert.Equal(t, []byte("after free"), b.bytes(), "a freed buffer can be written again")
	b.free()
}

func TestRetireFreesOnlyUnreadSnapshots(t *testing.T) {
	newSnap := func() *snapshot {
		s := &snapshot{}
		_, _ = s.textGzipBuf.Write([]byte("body"))
		s.textGzip = s.textGzipBuf.bytes()
		return s
	}
	var r snapshotRenderer
	a, b, c := newSnap(), newSnap(), newSnap()
	a.readers.Add(1) // a scrape still writing a
	r.retire(a)
	r.retire(b)
	assert.Equal(t, []*snapshot{a, b}, r.retired, "a read snapshot stays")
	assert.Equal(t, []byte("body"), a.textGzip)

	a.readers.Add(-1)
	r.retire(c)
	assert.Equal(t, []*snapshot{c}, r.retired, "one spare, the newest")
	assert.Nil(t, a.textGzip)
	assert.Nil(t, b.textGzip)
	assert.Equal(t, []byte("body"), c.textGzip)

	d := newSnap()
	d.readers.Add(1)
	r.freeAll(d)
	assert.Empty(t, r.retired)
	assert.Nil(t, c.textGzip)
	assert.Equal(t, []byte("body"), d.textGzip, "a snapshot still read is not unmapped")
	d.readers.Add(-1)
	d.free()
}
