package otlpwire

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// tightNesting is the MaxNesting of the decoder that checks refusals by our own limit.
const tightNesting = 2

// checkDifferential decodes data with pdata and with the decoder, three ways, and fails
// unless they agree:
//   - ptrace.ProtoUnmarshaler (the Kafka receiver's path) against a default Decoder;
//   - ptraceotlp.ExportRequest (the OTLP receivers' path, which migrates ResourceSpans field
//     1000) against a Decoder with MigrateDeprecatedScopeSpans;
//   - ptrace.ProtoUnmarshaler against a Decoder with MaxNesting 2, which may refuse a request
//     pdata accepts with ErrTooDeep, and only when the default Decoder accepts the same bytes:
//     then the refusal is due to the limit alone.
//
// "Agree" is: both refuse (the decoder with ErrMalformed), or both accept and the canonical
// dumps are identical. It returns whether pdata accepted.
func checkDifferential(t testing.TB, data []byte) bool {
	t.Helper()
	td, perr := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
	want, spans := "", 0
	if perr == nil {
		want, spans = dumpPdata(td), td.SpanCount()
	}
	var d Decoder
	err := d.Decode(data)
	agree(t, "ProtoUnmarshaler", data, want, spans, perr, &d, err)

	req := ptraceotlp.NewExportRequest()
	rerr := req.UnmarshalProto(data)
	dm := Decoder{MigrateDeprecatedScopeSpans: true}
	merr := dm.Decode(data)
	migrated, migratedSpans := "", 0
	if rerr == nil {
		migrated, migratedSpans = dumpPdata(req.Traces()), req.Traces().SpanCount()
	}
	agree(t, "ExportRequest", data, migrated, migratedSpans, rerr, &dm, merr)

	dt := Decoder{Limits: Limits{MaxNesting: tightNesting}}
	terr := dt.Decode(data)
	if errors.Is(terr, ErrTooDeep) {
		if perr == nil && err != nil {
			t.Fatalf("max_nesting refusal %v where the default decoder refuses too (%v) and pdata accepts\ninput %x", terr, err, data)
		}
		return perr == nil
	}
	agree(t, "ProtoUnmarshaler, max_nesting 2", data, want, spans, perr, &dt, terr)
	if terr == nil && perr == nil && maxNesting(td) > tightNesting {
		t.Fatalf("max_nesting 2 accepted a value nested %d deep\ninput %x", maxNesting(td), data)
	}
	return perr == nil
}

// maxNesting returns the deepest nesting of arrays and maps in td's attribute values.
func maxNesting(td ptrace.Traces) int {
	deepest := 0
	var value func(v pcommon.Value, depth int)
	value = func(v pcommon.Value, depth int) {
		switch v.Type() {
		case pcommon.ValueTypeSlice:
			deepest = max(deepest, depth+1)
			for _, e := range v.Slice().All() {
				value(e, depth+1)
			}
		case pcommon.ValueTypeMap:
			deepest = max(deepest, depth+1)
			for _, e := range v.Map().All() {
				value(e, depth+1)
			}
		}
	}
	attrs := func(m pcommon.Map) {
		for _, v := range m.All() {
			value(v, 0)
		}
	}
	for _, rs := range td.ResourceSpans().All() {
		attrs(rs.Resource().Attributes())
		for _, ss := range rs.ScopeSpans().All() {
			attrs(ss.Scope().Attributes())
			for _, sp := range ss.Spans().All() {
				attrs(sp.Attributes())
				for _, ev := range sp.Events().All() {
					attrs(ev.Attributes())
				}
				for _, l := range sp.Links().All() {
					attrs(l.Attributes())
				}
			}
		}
	}
	return deepest
}

// agree fails unless pdata (its dump want, its span count, its error perr) and the decoder
// agree.
func agree(t testing.TB, what string, data []byte, want string, spans int, perr error, d *Decoder, err error) {
	t.Helper()
	switch {
	case perr != nil && err != nil:
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: pdata refuses (%v), decoder refuses with %v, not ErrMalformed\ninput %x", what, perr, err, data)
		}
		if d.NumResources() != 0 || d.NumSpans() != 0 {
			t.Fatalf("%s: a refused request left %d resources, %d spans", what, d.NumResources(), d.NumSpans())
		}
		var de *DecodeError
		if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(data) || de.Reason == "" {
			t.Fatalf("%s: error %#v does not say where and why\ninput %x", what, err, data)
		}
	case perr != nil:
		t.Fatalf("%s: pdata refuses (%v), decoder accepts\ninput %x", what, perr, data)
	case err != nil:
		t.Fatalf("%s: pdata accepts, decoder refuses: %v\ninput %x", what, err, data)
	default:
		if got := dumpWire(d); want != got {
			require.Equal(t, want, got, "%s: dumps differ\ninput %x", what, data)
		}
		if d.NumSpans() != spans {
			t.Fatalf("%s: NumSpans %d, pdata SpanCount %d", what, d.NumSpans(), spans)
		}
	}
}

type encoding struct {
	name   string
	encode func(ptrace.Traces) []byte
}

var encodings = []encoding{
	{"pdata", func(td ptrace.Traces) []byte {
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			panic(err)
		}
		return b
	}},
	{"ascending", ascending{}.traces},
	{"ascending-zeros", ascending{zeros: true}.traces},
}

// corpus returns every input of the differential corpus, named.
func corpus() map[string][]byte {
	out := map[string][]byte{}
	for _, c := range pdataCorpus() {
		for _, e := range encodings {
			out[c.name+"/"+e.name] = e.encode(c.td)
		}
	}
	for _, c := range rawCorpus() {
		out["raw/"+c.name] = c.data
	}
	return out
}

func TestDifferentialPdataCorpus(t *testing.T) {
	refused := map[string]bool{"arrays-50": true, "maps-33": true}
	for _, c := range pdataCorpus() {
		for _, e := range encodings {
			t.Run(c.name+"/"+e.name, func(t *testing.T) {
				accepted := checkDifferential(t, e.encode(c.td))
				require.Equal(t, !refused[c.name], accepted, "pdata's verdict on this case changed")
			})
		}
	}
}

func TestDifferentialRawCorpus(t *testing.T) {
	for _, c := range rawCorpus() {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.accept, checkDifferential(t, c.data), "pdata's verdict on this case changed")
		})
	}
}

// TestDifferentialMutations runs the differential check on every prefix of the smaller
// corpus inputs and on every single-byte change of three kinds: the deterministic part of
// what the fuzzer does at random.
func TestDifferentialMutations(t *testing.T) {
	const maxLen = 2048
	n := 0
	for name, data := range corpus() {
		if len(data) > maxLen {
			continue
		}
		t.Run(name, func(t *testing.T) {
			for i := range data {
				checkDifferential(t, data[:i])
				for _, mutate := range []func(byte) byte{
					func(b byte) byte { return b ^ 0x80 },
					func(b byte) byte { return b + 1 },
					func(byte) byte { return 0xff },
				} {
					m := append([]byte(nil), data...)
					m[i] = mutate(m[i])
					checkDifferential(t, m)
					n++
				}
			}
		})
	}
	t.Logf("%d mutated inputs", n)
}
