package wiretraces

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/collector/pdata/testdata"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// request returns pdata's encoding of traces with resources resources of spans spans each,
// every resource named after its index so that order shows.
func request(t testing.TB, resources, spans int) (ptrace.Traces, []byte) {
	td := ptrace.NewTraces()
	for i := range resources {
		part := testdata.GenerateTraces(spans)
		part.ResourceSpans().At(0).Resource().Attributes().PutStr("service.name", "svc-"+string(rune('a'+i)))
		part.ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	}
	buf, err := ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
	require.NoError(t, err)
	return td, buf
}

func TestWrapDoesNotCopy(t *testing.T) {
	require.True(t, zeroCopy, "pdata's ByteSlice layout changed: bytes.go copies now")
	_, req := request(t, 2, 10)
	td := Wrap(req)

	got, ok := Unwrap(td)
	require.True(t, ok)
	assert.Same(t, unsafe.SliceData(req), unsafe.SliceData(got), "Unwrap returned a copy")
	assert.Len(t, got, len(req))

	// Through pdata's public API the value holds the same bytes.
	v, ok := td.ResourceSpans().At(0).Resource().Attributes().Get(KeyExportRequest)
	require.True(t, ok)
	require.Equal(t, pcommon.ValueTypeBytes, v.Type())
	assert.Equal(t, req, v.Bytes().AsRaw())

	// A write to the buffer shows through the traces: they hold it, nothing else.
	req[len(req)-1] ^= 0xff
	assert.Equal(t, req[len(req)-1], v.Bytes().At(len(req)-1))
}

func TestWireTracesShape(t *testing.T) {
	_, req := request(t, 1, 3)
	td := Wrap(req)
	// What a stock component sees: one resource, one attribute, no scopes, no spans.
	require.Equal(t, 1, td.ResourceSpans().Len())
	rs := td.ResourceSpans().At(0)
	assert.Equal(t, 0, rs.ScopeSpans().Len())
	assert.Equal(t, 1, rs.Resource().Attributes().Len())
	assert.Equal(t, 0, td.SpanCount())
}

func TestMaterializeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		resources int
		spans     int
	}{
		{"empty", 0, 0},
		{"one span", 1, 1},
		{"three resources", 3, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, req := request(t, tc.resources, tc.spans)
			for name, td := range map[string]ptrace.Traces{"Wrap": Wrap(req), "WrapTracesData": WrapTracesData(req)} {
				got, err := Materialize(td)
				require.NoError(t, err, name)
				assert.Equal(t, want, got, name)
				// Byte equality: pdata marshals the materialised traces back to the request.
				back, err := ptraceotlp.NewExportRequestFromTraces(got).MarshalProto()
				require.NoError(t, err)
				assert.Equal(t, req, back, name)
				// The carried bytes are untouched.
				again, ok := Unwrap(td)
				require.True(t, ok)
				assert.Equal(t, req, again)
			}
		})
	}
}

func TestMaterializePassesOrdinaryTracesThrough(t *testing.T) {
	td, _ := request(t, 2, 5)
	got, err := Materialize(td)
	require.NoError(t, err)
	assert.True(t, got == td, "ordinary traces must be returned as they are, not copied")

	empty := ptrace.NewTraces()
	got, err = Materialize(empty)
	require.NoError(t, err)
	assert.True(t, got == empty)
}

func TestMaterializeReadOnlyTraces(t *testing.T) {
	want, req := request(t, 2, 5)
	td := Wrap(req)
	td.ResourceSpans().At(0).Resource().Attributes().PutStr("header", "h")
	td.MarkReadOnly() // a fan-out to several consumers shares them read-only
	got, err := Materialize(td)
	require.NoError(t, err)
	for i := range want.ResourceSpans().Len() {
		want.ResourceSpans().At(i).Resource().Attributes().PutStr("header", "h")
	}
	assert.Equal(t, want, got)
}

// TestMaterializeMixed: batching merges wire traces with each other and with ordinary ones;
// every carrier is replaced by its request's ResourceSpans, in place.
func TestMaterializeMixed(t *testing.T) {
	first, _ := request(t, 1, 2)
	second, req2 := request(t, 2, 3)
	third, req3 := request(t, 1, 4)
	last, _ := request(t, 1, 1)

	td := ptrace.NewTraces()
	first.ResourceSpans().At(0).CopyTo(td.ResourceSpans().AppendEmpty())
	Wrap(req2).ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	WrapTracesData(req3).ResourceSpans().MoveAndAppendTo(td.ResourceSpans())
	last.ResourceSpans().At(0).CopyTo(td.ResourceSpans().AppendEmpty())

	_, ok := Unwrap(td)
	assert.False(t, ok, "merged wire traces are not Wrap's form")

	got, err := Materialize(td)
	require.NoError(t, err)
	want := ptrace.NewTraces()
	for _, part := range []ptrace.Traces{first, second, third, last} {
		part.ResourceSpans().MoveAndAppendTo(want.ResourceSpans())
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 4, td.ResourceSpans().Len(), "the input is only read")
}

// TestMaterializeAddedAttributes: the Kafka receiver puts header attributes on every resource
// it decoded; on wire traces it puts them on the carrier, and Materialize moves them to the
// request's resources with the same upsert.
func TestMaterializeAddedAttributes(t *testing.T) {
	_, req := request(t, 3, 2)

	stock, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(req)
	require.NoError(t, err)
	wire := WrapTracesData(req)
	for _, td := range []ptrace.Traces{stock, wire} {
		for i := range td.ResourceSpans().Len() {
			attrs := td.ResourceSpans().At(i).Resource().Attributes()
			attrs.PutStr("kafka.topic", "spans")
			attrs.PutStr("service.name", "from-header") // an existing key: updated in place
			attrs.PutStr("kafka.topic", "spans-2")      // put twice: the last value wins
		}
	}
	_, ok := Unwrap(wire)
	assert.False(t, ok, "a carrier with added attributes is not Wrap's form")

	got, err := Materialize(wire)
	require.NoError(t, err)
	assert.Equal(t, stock, got)
}

func TestMaterializeMalformed(t *testing.T) {
	_, req := request(t, 1, 3)
	bad := req[:len(req)-1] // truncated
	for _, td := range []ptrace.Traces{Wrap(bad), WrapTracesData(bad)} {
		_, err := Materialize(td)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "wiretraces: cannot unmarshal the carried request")
	}
}

func TestUnwrapRecognisesOnlyWrapsForm(t *testing.T) {
	_, req := request(t, 1, 2)
	ordinary, _ := request(t, 1, 2)

	stringMarker := ptrace.NewTraces()
	stringMarker.ResourceSpans().AppendEmpty().Resource().Attributes().PutStr(KeyExportRequest, string(req))

	withScope := Wrap(req)
	withScope.ResourceSpans().At(0).ScopeSpans().AppendEmpty()

	twoCarriers := Wrap(req)
	Wrap(req).ResourceSpans().MoveAndAppendTo(twoCarriers.ResourceSpans())

	for name, td := range map[string]ptrace.Traces{
		"ordinary":             ordinary,
		"empty":                ptrace.NewTraces(),
		"marker as a string":   stringMarker,
		"carrier with a scope": withScope,
		"two carriers":         twoCarriers,
	} {
		_, ok := Unwrap(td)
		assert.False(t, ok, name)
		var d otlpwire.Decoder
		ok, err := Decode(&d, td)
		assert.False(t, ok, name)
		assert.NoError(t, err, name)
	}

	// A carrier with a scope is data of its own: Materialize leaves it alone.
	got, err := Materialize(withScope)
	require.NoError(t, err)
	assert.True(t, got == withScope)
}

// deprecatedOnly returns a request whose one ResourceSpans holds its spans only in field 1000,
// the deprecated instrumentation_library_spans, which the two readings treat differently.
func deprecatedOnly() []byte {
	var span []byte
	span = protowire.AppendTag(span, 1, protowire.BytesType)
	span = protowire.AppendBytes(span, make([]byte, 16))
	span = protowire.AppendTag(span, 2, protowire.BytesType)
	span = protowire.AppendBytes(span, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	span = protowire.AppendTag(span, 5, protowire.BytesType)
	span = protowire.AppendString(span, "op")
	var scopeSpans []byte
	scopeSpans = protowire.AppendTag(scopeSpans, 2, protowire.BytesType)
	scopeSpans = protowire.AppendBytes(scopeSpans, span)
	var rs []byte
	rs = protowire.AppendTag(rs, 1000, protowire.BytesType)
	rs = protowire.AppendBytes(rs, scopeSpans)
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	return protowire.AppendBytes(req, rs)
}

func TestDeprecatedScopeSpansFollowTheWrapper(t *testing.T) {
	req := deprecatedOnly()

	otlp := ptraceotlp.NewExportRequest()
	require.NoError(t, otlp.UnmarshalProto(req))
	require.Equal(t, 1, otlp.Traces().SpanCount(), "the OTLP receivers' reading migrates field 1000")
	kafka, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(req)
	require.NoError(t, err)
	require.Equal(t, 0, kafka.SpanCount(), "ptrace.ProtoUnmarshaler ignores field 1000")

	got, err := Materialize(Wrap(req))
	require.NoError(t, err)
	assert.Equal(t, otlp.Traces(), got)
	got, err = Materialize(WrapTracesData(req))
	require.NoError(t, err)
	assert.Equal(t, kafka, got)

	var d otlpwire.Decoder
	ok, err := Decode(&d, Wrap(req))
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, 1, d.NumSpans())
	ok, err = Decode(&d, WrapTracesData(req))
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, 0, d.NumSpans())
}

func TestDecode(t *testing.T) {
	want, req := request(t, 2, 7)
	var d otlpwire.Decoder
	ok, err := Decode(&d, Wrap(req))
	require.True(t, ok)
	require.NoError(t, err)
	assert.Equal(t, want.SpanCount(), d.NumSpans())
	require.Equal(t, 2, d.NumResources())
	svc, ok := d.Resource(1).Attributes().Get("service.name")
	require.True(t, ok)
	assert.Equal(t, "svc-b", svc.AsString())

	ok, err = Decode(&d, Wrap(req[:len(req)-1]))
	assert.True(t, ok)
	assert.ErrorIs(t, err, otlpwire.ErrMalformed)
}

// TestCloneCopiesTheBuffer: a fan-out clones wire traces for a mutating consumer with CopyTo,
// which copies the bytes, so each copy owns its buffer.
func TestCloneCopiesTheBuffer(t *testing.T) {
	_, req := request(t, 1, 2)
	td := Wrap(req)
	clone := ptrace.NewTraces()
	td.CopyTo(clone)
	got, ok := Unwrap(clone)
	require.True(t, ok)
	assert.Equal(t, req, got)
	assert.NotSame(t, unsafe.SliceData(req), unsafe.SliceData(got))
}

func TestWrapAllocations(t *testing.T) {
	_, req := request(t, 1, 100)
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := Unwrap(Wrap(req)); !ok {
			t.Fatal("not unwrapped")
		}
	})
	// ptrace.NewTraces, the ResourceSpans, the attribute and its value: a handful, none
	// proportional to the request.
	assert.LessOrEqual(t, allocs, 8.0)
}
