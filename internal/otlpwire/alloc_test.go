package otlpwire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeAllocations: in steady state a Decoder decodes a 1000-span request and the RED
// walk reads it (attributes looked up and rendered into a reused buffer) without allocating.
func TestDecodeAllocations(t *testing.T) {
	data := benchRequest(t)
	var d Decoder
	var scratch []byte
	var want uint64
	run := func() {
		if err := d.Decode(data); err != nil {
			t.Fatal(err)
		}
		var sum uint64
		sum, scratch = walkWire(&d, scratch)
		if want != 0 && sum != want {
			t.Fatalf("walk sum %d, want %d", sum, want)
		}
		want = sum
	}
	run() // grows the tables once
	require.Equal(t, 1000, d.NumSpans())
	require.Zero(t, testing.AllocsPerRun(20, run))
}

// TestDecodeAllocationsEveryValue: rendering every kind of value, maps of up to smallMap
// entries included, allocates nothing once the buffer has grown.
func TestDecodeAllocationsEveryValue(t *testing.T) {
	data := ascending{}.traces(allFields())
	var d Decoder
	var scratch []byte
	run := func() {
		require.NoError(t, d.Decode(data))
		for i := range d.NumResources() {
			a := d.Resource(i).Attributes()
			for j := range a.Len() {
				_, v := a.At(j)
				scratch = v.AppendString(scratch[:0])
			}
		}
	}
	run()
	require.Zero(t, testing.AllocsPerRun(20, run))
}
