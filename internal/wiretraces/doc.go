// Package wiretraces carries raw OTLP trace requests through the collector's pipelines inside
// ptrace.Traces, so that a receiver that holds the request's bytes (the otlpwire receiver, or
// the Kafka receiver with the otlpwire_encoding extension) can hand them to components that
// read them with internal/otlpwire instead of pdata, and pdata is built only where a
// component needs spans.
//
// # Wire traces
//
// Wire traces are a ptrace.Traces of one ResourceSpans with no scopes and no spans, whose
// resource holds one attribute: a reserved key (KeyExportRequest or KeyTracesData) whose bytes
// value is the request. The value is the request's own buffer, not a copy (bytes.go says how,
// since pdata's API copies), and the buffer belongs to the traces from Wrap on: the receiver
// never reuses it, so a queue downstream may hold the traces as long as it likes. A fan-out
// that clones the traces for a mutating consumer copies the buffer with them, as it would copy
// spans.
//
//	td := wiretraces.Wrap(req)                 // receiver: after validating req with otlpwire
//	ok, err := wiretraces.Decode(&decoder, td) // a component that reads the wire
//	td, err = wiretraces.Materialize(td)       // a component that needs pdata
//
// # The contract
//
// Only components that recognise the reserved keys may consume wire traces. In this
// repository those are the tracemetrics and tracegraph connectors, which reduce Wrap's form
// straight from the decoder (internal/pipeline, internal/wiretraces/traceview) and materialise
// any other form, and the hotspotfilter connector, which materialises pdata first.
//
// A stock component sees what the traces hold: one resource with one large bytes attribute
// and zero spans. SpanCount is 0, so processors that work on spans change nothing, the batch
// processor counts the traces as empty and merges them with others, and exporters send (or
// index, or print) a resource without spans: nothing fails, and the spans are silently not
// there. That is why the receivers that produce wire traces are separate components with their
// own names, never the stock `otlp` receiver or a stock encoding.
//
// A stock component gets pdata from a component in front of it that materialises: the
// hotspotfilter connector's traces output is pdata (with a rule whose condition selects
// nothing it passes every span). Otherwise receive the spans for those pipelines with the
// stock `otlp` receiver, on its own endpoint.
//
// Materialize accepts what batching makes of wire traces (several carriers, or carriers
// beside ordinary ResourceSpans) and what the Kafka receiver's header extraction makes of them
// (attributes added to the carrier's resource, which it puts on the request's resources). Unwrap
// and Decode recognise only the form Wrap makes; anything else is read through Materialize.
//
// # Decoded once
//
// A receiver validates a request by decoding it. It hands that decoding to the consumers it calls
// (WithDecoded, Decoded): a consumer that would decode the same bytes borrows the decoder instead,
// within the call (decoded.go).
//
// # Same pdata as the stock receivers
//
// Materialize decodes with pdata's own functions: KeyExportRequest with
// ptraceotlp.ExportRequest.UnmarshalProto, the reading of the OTLP receivers (HTTP, and gRPC
// through the same migration of the deprecated instrumentation_library_spans), KeyTracesData
// with ptrace.ProtoUnmarshaler, the reading of the Kafka receiver's otlp_proto encoding. Its
// output is what those components would have sent downstream.
package wiretraces // import "github.com/otelcol-red/otelcol-red/internal/wiretraces"
