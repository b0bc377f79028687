package wiretraces // import "github.com/otelcol-red/otelcol-red/internal/wiretraces"

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/otelcol-red/otelcol-red/internal/otlpwire"
)

// The reserved resource attribute keys. Each holds, as a bytes value, one OTLP protobuf
// message of the ExportTraceServiceRequest / TracesData layout (the two are the same bytes);
// the key says which of pdata's two readings gives its pdata, because they differ on the
// deprecated instrumentation_library_spans field (otlpwire's MigrateDeprecatedScopeSpans).
const (
	// KeyExportRequest carries a request as the OTLP receivers read it
	// (ptraceotlp.ExportRequest: ResourceSpans field 1000 read in place of an absent
	// scope_spans). Wrap uses it.
	KeyExportRequest = "otelcol_red.wire.export_request"
	// KeyTracesData carries a message as ptrace.ProtoUnmarshaler reads it (field 1000
	// ignored), which is the Kafka receiver's otlp_proto encoding. WrapTracesData uses it.
	KeyTracesData = "otelcol_red.wire.traces_data"
)

// reading is how a carried message becomes pdata, named by its key.
type reading uint8

const (
	asExportRequest reading = iota + 1
	asTracesData
)

// Wrap returns wire traces carrying req, an ExportTraceServiceRequest, to be read as the OTLP
// receivers read it. The traces hold req itself, not a copy: from now on req belongs to them
// and must never be modified or reused (a queue downstream may hold it for long).
func Wrap(req []byte) ptrace.Traces { return wrap(KeyExportRequest, req) }

// WrapTracesData is Wrap for a TracesData message to be read as ptrace.ProtoUnmarshaler
// reads it (the Kafka receiver's otlp_proto encoding).
func WrapTracesData(msg []byte) ptrace.Traces { return wrap(KeyTracesData, msg) }

func wrap(key string, buf []byte) ptrace.Traces {
	td := ptrace.NewTraces()
	attrs := td.ResourceSpans().AppendEmpty().Resource().Attributes()
	setBytes(attrs.PutEmptyBytes(key), buf)
	return td
}

// Unwrap returns the message td carries when td is wire traces exactly as Wrap or
// WrapTracesData made them: one ResourceSpans with no scopes whose resource holds only the
// reserved attribute. The slice is the traces' own, not a copy: read it, never modify it.
// Wire traces that a component changed (the Kafka receiver adds attributes from message
// headers to every resource, hence to the carrier's) are not unwrapped: Materialize applies
// those changes to the request's own resources.
func Unwrap(td ptrace.Traces) ([]byte, bool) {
	buf, _, ok := pure(td)
	return buf, ok
}

// Decode decodes the message td carries with d, reading the deprecated
// instrumentation_library_spans as the component that wrapped it would have (it sets
// d.MigrateDeprecatedScopeSpans accordingly). It reports false, without touching d, when td
// is not wire traces as Unwrap recognises them; the caller then reads td as pdata, through
// Materialize.
func Decode(d *otlpwire.Decoder, td ptrace.Traces) (bool, error) {
	buf, r, ok := pure(td)
	if !ok {
		return false, nil
	}
	d.MigrateDeprecatedScopeSpans = r == asExportRequest
	return true, d.Decode(buf)
}

func pure(td ptrace.Traces) ([]byte, reading, bool) {
	rss := td.ResourceSpans()
	if rss.Len() != 1 {
		return nil, 0, false
	}
	rs := rss.At(0)
	if rs.Resource().Attributes().Len() != 1 {
		return nil, 0, false
	}
	return carried(rs)
}

// carried returns the message rs carries and its reading, or false when rs is an ordinary
// ResourceSpans. A carrier has no scopes: anything else is data of its own, whatever its
// attributes say.
func carried(rs ptrace.ResourceSpans) ([]byte, reading, bool) {
	if rs.ScopeSpans().Len() != 0 {
		return nil, 0, false
	}
	attrs := rs.Resource().Attributes()
	if v, ok := attrs.Get(KeyExportRequest); ok && v.Type() == pcommon.ValueTypeBytes {
		return getBytes(v.Bytes()), asExportRequest, true
	}
	if v, ok := attrs.Get(KeyTracesData); ok && v.Type() == pcommon.ValueTypeBytes {
		return getBytes(v.Bytes()), asTracesData, true
	}
	return nil, 0, false
}

// Materialize returns td as pdata: the traces a stock receiver would have produced from the
// carried messages, in place of every carrier ResourceSpans, and any other ResourceSpans as
// they are. Traces without a carrier are returned as they are, not copied, so a component
// calls it on whatever it receives. Attributes a component added to a carrier's resource
// (Kafka header extraction) are put on every resource of its message, as that component
// would have put them on the resources a stock decoding gives. A carried message pdata
// refuses is an error (the receivers of this project validate before wrapping, so only a
// message wrapped without validation gets there).
//
// The result shares nothing with td's carried bytes that anyone modifies: pdata copies what
// it reads. td itself is only read.
func Materialize(td ptrace.Traces) (ptrace.Traces, error) {
	rss := td.ResourceSpans()
	carriers := 0
	for i := range rss.Len() {
		if _, _, ok := carried(rss.At(i)); ok {
			carriers++
		}
	}
	if carriers == 0 {
		return td, nil
	}
	if rss.Len() == 1 {
		return materialize(rss.At(0))
	}
	// Several ResourceSpans, carriers among them: a batching step merged wire traces, or
	// wire traces with ordinary ones. Order is kept.
	out := ptrace.NewTraces()
	for i := range rss.Len() {
		rs := rss.At(i)
		if _, _, ok := carried(rs); !ok {
			rs.CopyTo(out.ResourceSpans().AppendEmpty())
			continue
		}
		part, err := materialize(rs)
		if err != nil {
			return ptrace.Traces{}, err
		}
		part.ResourceSpans().MoveAndAppendTo(out.ResourceSpans())
	}
	return out, nil
}

// materialize decodes the message carrier carries into new pdata.
func materialize(carrier ptrace.ResourceSpans) (ptrace.Traces, error) {
	buf, r, _ := carried(carrier)
	var td ptrace.Traces
	var err error
	switch r {
	case asExportRequest:
		// The OTLP receivers' own reading: ExportRequest.UnmarshalProto migrates the
		// deprecated scope spans, as the gRPC server's codec does.
		req := ptraceotlp.NewExportRequest()
		if err = req.UnmarshalProto(buf); err == nil {
			td = req.Traces()
		}
	default:
		td, err = (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(buf)
	}
	if err != nil {
		return ptrace.Traces{}, fmt.Errorf("wiretraces: cannot unmarshal the carried request: %w", err)
	}
	added := carrier.Resource().Attributes()
	if added.Len() > 1 {
		rss := td.ResourceSpans()
		for i := range rss.Len() {
			attrs := rss.At(i).Resource().Attributes()
			for k, v := range added.All() {
				if k == KeyExportRequest || k == KeyTracesData {
					continue
				}
				// PutEmpty then CopyTo is an upsert: an existing key keeps its place and
				// takes the value, a new one goes last, as PutStr does for the Kafka
				// receiver's header attributes.
				v.CopyTo(attrs.PutEmpty(k))
			}
		}
	}
	return td, nil
}
