// Package traceview reads the spans of a request through one code path, whether the request
// is pdata (ptrace.Traces) or bytes decoded by internal/otlpwire (the wire traces of package
// wiretraces). The trace connectors reduce requests with it: their reducers are written once,
// as generic functions over a Source, and compiled twice, once per source, with nothing of the
// other source left in either.
//
//	func reduce[S traceview.Source](req traceview.Request[S]) {
//		var rs traceview.Resource[S]
//		var sp traceview.Span[S]
//		for i := range req.NumResources() {
//			req.ReadResource(i, &rs)
//			svc, _ := rs.Attributes().GetVal("service.name", nil)
//			...	rs.ReadScope(j, &sc); sc.ReadSpan(k, &sp); sp.Name, sp.Kind, sp.Attributes()
//		}
//	}
//	reduce(traceview.FromPdata(td))   // ptrace.Traces
//	reduce(traceview.FromWire(&d))    // an otlpwire.Decoder that decoded the request
//
// # How one code path costs the pdata path nothing
//
// A Source is one of two array types, Pdata ([0]struct{}) and Wire ([1]struct{}). Go compiles
// a generic function once per shape of its type arguments, and these two have different
// shapes, so each gets its own code; in it, len of a value of the source type is a constant,
// so IsWire is a constant and `if traceview.IsWire[S]() { ... } else { ... }` keeps one
// branch. Both instantiations call the pdata and otlpwire accessors directly, as hand-written
// code would. Rejected:
//   - A type parameter constrained by an interface of accessors (Name, Kind, Get, ...)
//     implemented by a pdata adapter and a wire adapter: Go calls such methods through the
//     instantiation's dictionary, an indirect call that is never inlined. Measured on the
//     accessors a span needs (name, kind, status, times, trace ID, two attribute look-ups):
//     22–23 ns per span against 10.5 for the same code on pdata directly.
//   - Type switches on the type parameter (`switch any(v).(type)`): the compiler keeps both
//     cases and compares type words at run time; +0.6 ns per accessor.
//   - Views holding both representations (a pdata handle and otlpwire's 40–48-byte views) in
//     one struct: larger than four words, such a struct is not kept in registers, and the
//     copies the compiler makes of it (16-byte loads of what was just written 8 bytes at a
//     time) stall on store forwarding: 60–100 ns per span.
//
// So the views stay small. A Request, Attrs and Value are at most four words and live in
// registers. Resource, Scope, Span and Event are cursors: structs in the caller's memory that
// Read... methods fill (a span's name, kind, status, times, IDs and tracestate are copied into
// fields, once per span, instead of one accessor call each), and that hold the otlpwire views
// the smaller ones point to. A view is valid until its cursor is read again, and no view
// outlives the request.
//
// Methods that hold a branch for each source are not inlined (the compiler prices both
// branches before it drops one), so the views do their work in one call where they can:
// GetVal looks an attribute up and reads its value, ReadSpan copies a span's fields. All
// iterates and is inlined into its caller, down to the pdata or otlpwire loop.
//
// # Values
//
// Val is a value as the connectors use it: its type and, for a string, an int, a double or a
// bool, its payload; for bytes, a map or a slice, its tagged encoding (AppendTagged, the
// encoding below) when the caller gave a buffer to encode it into. A string of the wire source
// points into the request (String): it is valid while the request is, and whatever outlives
// the request must copy it, as with pdata strings.
//
// The tagged encoding is lossless: a tag byte (TagEmpty ... TagSlice) and, for a string or
// bytes, a uvarint length and the bytes; for an int or a double, 8 bytes little endian (the
// double's bits); for a map, a uvarint count and its entries, each a length-prefixed key and
// a tagged value, in their order (repeated keys kept); for a slice, a uvarint count and its
// tagged values. Tag 0 is never written, so that a user of the encoding can mark an absent
// value with it. pdata and the wire give the same bytes for the same value
// (TestSameFromBothSources).
//
// AppendString renders a value as pcommon.Value.AsString does, byte for byte, from either
// source.
package traceview // import "github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
