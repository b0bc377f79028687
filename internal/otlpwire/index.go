package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// The index Decode builds: flat tables of small fixed-size records that point into the
// request by offset. No record holds a pointer, so the garbage collector never scans the
// tables, and a Decoder reuses them from request to request (truncated, never freed).
//
// Each kind of attribute owner has its own key-value table. A span's attributes, events and
// links may interleave on the wire (any field order, repeated fields anywhere), and so may a
// scope's attributes and its spans, or a resource's attributes and its scopes; with one table
// per owner kind every owner's entries are still appended without interruption, so each
// owner names them with one range, in one pass over the bytes.

// ref is a byte range of the request. n == 0 is the empty string, whatever off says.
type ref struct{ off, n uint32 }

// rng is a range [first, end) of a table.
type rng struct{ first, end uint32 }

func (r rng) len() int { return int(r.end - r.first) }

// resourceRec is one ResourceSpans: its Resource (merged from every occurrence, as pdata
// does) and its scopes.
type resourceRec struct {
	attrs  rng // in resourceKVs
	scopes rng // in scopes
}

// scopeRec is one ScopeSpans.
type scopeRec struct {
	name, version ref
	attrs         rng // in scopeKVs
	spans         rng // in spans
	// deprecated marks a ScopeSpans read from ResourceSpans field 1000, which pdata keeps
	// apart and uses only when migrating (see Decoder.MigrateDeprecatedScopeSpans).
	deprecated bool
}

// spanRec is one Span, every field last-wins as in pdata, Status merged.
type spanRec struct {
	// Offsets of the ID bytes; 0 (never the offset of a payload, which follows a tag)
	// stands for the all-zero ID an absent or empty field gives.
	traceID, spanID, parentID uint32
	traceState, name          ref
	statusMessage             ref
	kind, statusCode          int32
	flags                     uint32
	start, end                uint64
	attrs                     rng // in spanKVs
	events                    rng // in events
	links                     rng // in links
}

type eventRec struct {
	name  ref
	time  uint64
	attrs rng // in eventKVs
}

type linkRec struct {
	traceID, spanID uint32 // as in spanRec
	traceState      ref
	flags           uint32
	attrs           rng // in linkKVs
}

// kvRec is one KeyValue: its key (last occurrence) and its value resolved to the last
// oneof field of all its value occurrences, as pdata resolves it.
type kvRec struct {
	key ref
	typ ValueType
	// num holds an int, a bool (0/1) or a double's bits; for a string, bytes, array or map
	// it holds the payload's ref as off<<32 | n.
	num uint64
}

// index holds the tables of one decoded request.
type index struct {
	resources []resourceRec
	scopes    []scopeRec
	spans     []spanRec
	events    []eventRec
	links     []linkRec

	resourceKVs []kvRec
	scopeKVs    []kvRec
	spanKVs     []kvRec
	eventKVs    []kvRec
	linkKVs     []kvRec
}

// reset empties the tables and keeps their memory.
func (ix *index) reset() {
	ix.resources = ix.resources[:0]
	ix.scopes = ix.scopes[:0]
	ix.spans = ix.spans[:0]
	ix.events = ix.events[:0]
	ix.links = ix.links[:0]
	ix.resourceKVs = ix.resourceKVs[:0]
	ix.scopeKVs = ix.scopeKVs[:0]
	ix.spanKVs = ix.spanKVs[:0]
	ix.eventKVs = ix.eventKVs[:0]
	ix.linkKVs = ix.linkKVs[:0]
}
