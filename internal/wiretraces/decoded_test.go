package wiretraces

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// A hand-off lends its decoder for the very request it decoded, read the same way, while it is
// open; Close reports whether a borrow is still out.
func TestDecodedBorrow(t *testing.T) {
	_, req := request(t, 2, 3)
	d := &otlpwire.Decoder{MigrateDeprecatedScopeSpans: true}
	require.NoError(t, d.Decode(req))
	h := NewDecoded(d, req)

	assert.Same(t, d, h.Borrow(Wrap(req)), "the request it decoded")
	h.Return()
	assert.Nil(t, h.Borrow(Wrap(append([]byte(nil), req...))), "the same bytes elsewhere: another request")
	assert.Nil(t, h.Borrow(Wrap(req[:len(req)-1])), "a part of it")
	assert.Nil(t, h.Borrow(WrapTracesData(req)), "read as TracesData: the deprecated scope spans differ")
	ordinary, _ := request(t, 1, 1)
	assert.Nil(t, h.Borrow(ordinary), "not wire traces")

	require.Same(t, d, h.Borrow(Wrap(req)))
	assert.False(t, h.Close(), "closed while borrowed: the owner must not reuse the decoder")
	h.Return()
	assert.Nil(t, h.Borrow(Wrap(req)), "closed")

	h.Reset(d, req)
	require.Same(t, d, h.Borrow(Wrap(req)))
	h.Return()
	assert.True(t, h.Close(), "nothing borrowed")
}

func TestDecodedContext(t *testing.T) {
	assert.Nil(t, DecodedFrom(context.Background()))
	h := NewDecoded(new(otlpwire.Decoder), nil)
	assert.Same(t, h, DecodedFrom(WithDecoded(context.Background(), h)))
}
