package mem

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOffHeapBufferGrowsKeepsContentAndResets(t *testing.T) {
	var b Buffer
	var want bytes.Buffer
	piece := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	// Past several doublings of bufferMin.
	for want.Len() < 5*bufferMin {
		n, err := b.Write(piece)
		require.NoError(t, err)
		require.Equal(t, len(piece), n)
		want.Write(piece)
	}
	require.Equal(t, want.Bytes(), b.Bytes())
	require.NotNil(t, b.chunk.mem, "large buffers are mapped outside the heap on this system")
	mapped := len(b.chunk.Values)

	b.Reset()
	assert.Empty(t, b.Bytes())
	_, _ = b.Write([]byte("again"))
	assert.Equal(t, []byte("again"), b.Bytes())
	assert.Equal(t, mapped, len(b.chunk.Values), "reset keeps the mapping for the next content")

	b.Free()
	assert.Empty(t, b.Bytes())
	_, _ = b.Write([]byte("after free"))
	assert.Equal(t, []byte("after free"), b.Bytes(), "a freed buffer can be written again")
	b.Free()
}
