package otlpwire

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestDecodeRefusals(t *testing.T) {
	var d Decoder

	err := d.Decode(inSpan(pbBytes(nil, 1, []byte{1, 2, 3})))
	require.ErrorIs(t, err, ErrMalformed)
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 8, de.Offset, "offset of the 3-byte trace_id payload")
	assert.Contains(t, err.Error(), "Span.trace_id of the wrong length at offset 8")

	d.Limits = Limits{MaxRequestBytes: 10}
	require.NoError(t, d.Decode(make([]byte, 0)))
	require.NoError(t, d.Decode(bytes.Repeat([]byte{0x0a, 0x00}, 5)), "exactly max_request_bytes")
	require.Equal(t, 5, d.NumResources())
	err = d.Decode(bytes.Repeat([]byte{0x0a, 0x00}, 6))
	require.ErrorIs(t, err, ErrTooLarge)
	require.NotErrorIs(t, err, ErrMalformed)
	require.Zero(t, d.NumResources(), "a refused request leaves nothing behind")

	d.Limits = Limits{MaxNesting: 3}
	require.NoError(t, d.Decode(deepValue(3, 0, true)))
	require.ErrorIs(t, d.Decode(deepValue(4, 0, true)), ErrTooDeep)
	require.NoError(t, d.Decode(deepValue(1, 2, true)))
	require.ErrorIs(t, d.Decode(deepValue(2, 2, true)), ErrTooDeep)
	require.ErrorIs(t, d.Decode(deepValue(4, 0, false)), ErrTooDeep, "an empty array counts as a level")

	d.Limits = Limits{}
	require.NoError(t, d.Decode(deepValue(49, 0, true)))
	err = d.Decode(deepValue(50, 0, true))
	require.ErrorIs(t, err, ErrMalformed, "beyond pdata's own limit the refusal is pdata's")
	require.NotErrorIs(t, err, ErrTooDeep)
}

func TestLimits(t *testing.T) {
	require.NoError(t, Limits{}.Validate())
	require.NoError(t, Limits{MaxRequestBytes: 1, MaxNesting: 49}.Validate())
	err := Limits{MaxRequestBytes: -1, MaxNesting: 50}.Validate()
	require.ErrorContains(t, err, "max_request_bytes must be")
	require.ErrorContains(t, err, "max_nesting must be between 0 (default) and 49")

	assert.Equal(t, Limits{MaxRequestBytes: DefaultMaxRequestBytes, MaxNesting: DefaultMaxNesting}, Limits{}.resolved())
	assert.Equal(t, Limits{MaxRequestBytes: math.MaxInt32, MaxNesting: 49},
		Limits{MaxRequestBytes: math.MaxInt, MaxNesting: 1000}.resolved(), "out of range values are clamped")
}

// TestDecoderReuse: what a Decoder shows never depends on what it decoded before, refused
// requests included, and a Value outlives the Decoder's next Decode.
func TestDecoderReuse(t *testing.T) {
	a := ascending{}.traces(allFields())
	b := encodings[0].encode(genRequest(100, 4))
	fresh := func(data []byte) string {
		var d Decoder
		require.NoError(t, d.Decode(data))
		return dumpWire(&d)
	}
	wantA, wantB := fresh(a), fresh(b)

	var d Decoder
	require.NoError(t, d.Decode(a))
	v, ok := d.Resource(0).Attributes().Get("map")
	require.True(t, ok)
	rendered := v.AsString()
	for _, data := range [][]byte{b, a[:len(a)-3], a, b, nil, a} {
		if err := d.Decode(data); err != nil {
			require.Zero(t, d.NumSpans())
			continue
		}
		want := wantA
		switch {
		case len(data) == 0:
			want = ""
		case bytes.Equal(data, b):
			want = wantB
		}
		require.Equal(t, want, dumpWire(&d))
	}
	require.Equal(t, rendered, v.AsString(), "a Value reads the request, not the Decoder")
}

// TestDecodeLarge: a 5000-span request with a 1 MiB string and a 300 KiB bytes value
// (multi-byte lengths at every level) decodes as pdata decodes it.
func TestDecodeLarge(t *testing.T) {
	td := genRequest(5000, 20)
	attrs := td.ResourceSpans().At(3).ScopeSpans().At(1).Spans().At(7).Attributes()
	attrs.PutStr("big.string", strings.Repeat("x", 1<<20))
	attrs.PutEmptyBytes("big.bytes").FromRaw(bytes.Repeat([]byte{0xab}, 300<<10))
	for _, e := range encodings[:2] {
		data := e.encode(td)
		require.Greater(t, len(data), 2<<20)
		require.True(t, checkDifferential(t, data), e.name)
	}
}

func TestDeprecatedScopeSpans(t *testing.T) {
	names := func(d *Decoder) []string {
		var out []string
		for i := range d.NumResources() {
			for j := range d.Resource(i).NumScopes() {
				out = append(out, string(d.Resource(i).Scope(j).Name()))
			}
		}
		return out
	}
	raw := map[string][]byte{}
	for _, c := range rawCorpus() {
		raw[c.name] = c.data
	}
	for _, tc := range []struct {
		name             string
		plain, migrating []string
		migratingSpans   int
	}{
		{"deprecated/only", nil, []string{"old"}, 1},
		{"deprecated/and-current", []string{"new"}, []string{"new"}, 1},
		{"deprecated/interleaved", []string{"a", "b"}, []string{"a", "b"}, 2},
		{"deprecated/empty-current", []string{""}, []string{""}, 0},
		{"deprecated/two-resources", []string{"new"}, []string{"old", "new", "old3"}, 3},
	} {
		var plain, migrating Decoder
		migrating.MigrateDeprecatedScopeSpans = true
		require.NoError(t, plain.Decode(raw[tc.name]))
		require.NoError(t, migrating.Decode(raw[tc.name]))
		assert.Equal(t, tc.plain, names(&plain), tc.name)
		assert.Equal(t, tc.migrating, names(&migrating), tc.name)
		assert.Equal(t, tc.migratingSpans, migrating.NumSpans(), tc.name)
	}
}

func TestValueAccessors(t *testing.T) {
	td := everyValue()
	var d Decoder
	require.NoError(t, d.Decode(encodings[0].encode(td)))
	attrs := d.Resource(0).Scope(0).Span(0).Attributes()
	get := func(k string) Value {
		v, ok := attrs.Get(k)
		require.True(t, ok, k)
		return v
	}
	str, i, dbl, bl, byt := get("str"), get("int.neg"), get("double.2"), get("bool.true"), get("bytes")
	assert.Equal(t, "hello", string(str.Str()))
	assert.Equal(t, int64(-42), i.Int())
	assert.Equal(t, 3.14159, dbl.Double())
	assert.True(t, bl.Bool())
	assert.Equal(t, []byte{0, 1, 2, 0xfe, 0xff}, byt.Bytes())
	// another type's accessor gives the zero value, as pcommon.Value's do
	for _, v := range []Value{str, i, dbl, bl, byt} {
		n := 0
		for _, zero := range []bool{v.Str() == nil, v.Int() == 0, v.Double() == 0, !v.Bool(), v.Bytes() == nil,
			v.Slice().Len() == 0, v.Map().Len() == 0} {
			if !zero {
				n++
			}
		}
		assert.Equal(t, 1, n, v.Type().String())
	}
	_, ok := attrs.Get("absent")
	assert.False(t, ok)
	assert.Equal(t, -1, attrs.Index("absent"))
	_, ok = attrs.GetBytes([]byte("str"))
	assert.True(t, ok)
	// Index finds what Get finds, the first of a repeated key included.
	for i := range attrs.Len() {
		k, _ := attrs.At(i)
		j := attrs.Index(string(k))
		require.LessOrEqual(t, j, i)
		kj, vj := attrs.At(j)
		v, _ := attrs.Get(string(k))
		assert.Equal(t, string(k), string(kj))
		assert.Equal(t, v, vj)
	}

	m := get("map").Map()
	assert.Equal(t, 5, m.Len())
	nestedV, ok := m.Get("nested")
	require.True(t, ok)
	list, ok := nestedV.Map().Get("list")
	require.True(t, ok)
	it := list.Slice().Iter()
	require.True(t, it.Next())
	assert.Equal(t, 1e21, it.Value().Double())
	require.False(t, it.Next())
	require.False(t, it.Next(), "an iterator stays at its end")
	assert.Equal(t, "Bytes", ValueTypeBytes.String())
	assert.Empty(t, ValueType(200).String())
}

// TestAppendString: AppendString appends after what dst holds, and where pdata renders
// nothing (a NaN in an array) it leaves dst as it was.
func TestAppendString(t *testing.T) {
	var d Decoder
	require.NoError(t, d.Decode(encodings[0].encode(everyValue())))
	attrs := d.Resource(0).Scope(0).Span(0).Attributes()
	src, _ := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(encodings[0].encode(everyValue()))
	want := src.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	for i := range attrs.Len() {
		k, v := attrs.At(i)
		pv, _ := want.Get(string(k))
		got := v.AppendString([]byte("prefix|"))
		assert.Equal(t, "prefix|"+pv.AsString(), string(got), "%s", k)
	}
	nan, _ := attrs.Get("slice.nan")
	dst := []byte("kept")
	assert.Equal(t, "kept", string(nan.AppendString(dst)))
}

// TestIndexMemory pins the memory bound the Limits doc gives: the worst request, all empty
// spans (two bytes each, an 88-byte record each), leaves tables of at most ~90 bytes per
// request byte, append's slack included.
func TestIndexMemory(t *testing.T) {
	require.Equal(t, uintptr(88), unsafe.Sizeof(spanRec{}))
	require.Equal(t, uintptr(24), unsafe.Sizeof(kvRec{}))
	for _, n := range []int{1000, 100_000, 300_000} {
		data := inScopeSpans(bytes.Repeat([]byte{0x12, 0x00}, n))
		var d Decoder
		require.NoError(t, d.Decode(data))
		require.Equal(t, n, d.NumSpans())
		ix := &d.ix
		retained := cap(ix.spans)*int(unsafe.Sizeof(spanRec{})) + cap(ix.scopes)*int(unsafe.Sizeof(scopeRec{})) +
			cap(ix.resources)*int(unsafe.Sizeof(resourceRec{}))
		perByte := float64(retained) / float64(len(data))
		t.Logf("%d empty spans: %.1f index bytes per request byte", n, perByte)
		require.Less(t, perByte, 90.0)
	}
}

// TestModifiedAfterDecode: a view that meets bytes it cannot read (the request was changed
// after Decode) panics with a BUG message instead of yielding a wrong value.
func TestModifiedAfterDecode(t *testing.T) {
	data := inAnyValue(pbBytes(nil, 5, cat(pbBytes(nil, 1, pbUint(nil, 3, 1)), pbBytes(nil, 1, pbUint(nil, 3, 2)))))
	var d Decoder
	require.NoError(t, d.Decode(data))
	_, v := d.Resource(0).Scope(0).Span(0).Attributes().At(0)
	require.Equal(t, "[1,2]", v.AsString())
	data[len(data)-1] = 0xff // the last int becomes a truncated varint
	require.PanicsWithValue(t, "BUG: otlpwire: validated bytes no longer decode at offset "+strconv.Itoa(len(data)-2)+
		" (was the request modified after Decode?)", func() { v.AsString() })
}
