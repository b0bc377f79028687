package otlpwire

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// benchRequest is a 1000-span request of 10 resources (genRequest), in pdata's encoding.
func benchRequest(tb testing.TB) []byte {
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(genRequest(1000, 10))
	require.NoError(tb, err)
	return b
}

// BenchmarkDecode compares, on one 1000-span request in the same run: pdata's unmarshal
// alone (the floor of a pdata pipeline), pdata's unmarshal followed by the RED walk
// (walk_test.go), the decoder alone, and the decoder followed by the same walk.
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./internal/otlpwire/
func BenchmarkDecode(b *testing.B) {
	data := benchRequest(b)
	var d Decoder
	require.NoError(b, d.Decode(data))
	want, _ := walkWire(&d, nil)
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
	require.NoError(b, err)
	require.Equal(b, want, walkPdata(td), "the two walks read different values")

	b.Run("pdata-unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pdata-unmarshal+walk", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
			if err != nil {
				b.Fatal(err)
			}
			if walkPdata(td) != want {
				b.Fatal("wrong sum")
			}
		}
	})
	b.Run("otlpwire-decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		var d Decoder
		require.NoError(b, d.Decode(data)) // steady state: the tables have grown
		for b.Loop() {
			if err := d.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("otlpwire-decode+walk", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		var d Decoder
		require.NoError(b, d.Decode(data))
		_, scratch := walkWire(&d, nil)
		for b.Loop() {
			if err := d.Decode(data); err != nil {
				b.Fatal(err)
			}
			var sum uint64
			if sum, scratch = walkWire(&d, scratch); sum != want {
				b.Fatal("wrong sum")
			}
		}
	})
}
