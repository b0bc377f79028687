package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// Field readers for a tag already read at pos (payload at next). pdata refuses a known field
// whose wire type is not the one its schema declares (protobuf-go would skip it as unknown),
// so each reader checks the wire type first; name says which field in the error.

func wrongWire(pos int, name string) error {
	return malformed(pos, "wrong wire type for "+name)
}

func lenField(b []byte, pos, next, wire int, name string) (start, end int, err error) {
	if wire != wireLen {
		return 0, 0, wrongWire(pos, name)
	}
	return readLen(b, next)
}

func varintField(b []byte, pos, next, wire int, name string) (uint64, int, error) {
	if wire != wireVarint {
		return 0, 0, wrongWire(pos, name)
	}
	return readVarint(b, next)
}

func fixed64Field(b []byte, pos, next, wire int, name string) (uint64, int, error) {
	if wire != wireI64 {
		return 0, 0, wrongWire(pos, name)
	}
	return readFixed64(b, next)
}

func fixed32Field(b []byte, pos, next, wire int, name string) (uint32, int, error) {
	if wire != wireI32 {
		return 0, 0, wrongWire(pos, name)
	}
	return readFixed32(b, next)
}

// idField checks an ID payload [start, end): empty stands for the all-zero ID (offset 0),
// otherwise it must be exactly size bytes, as pdata's TraceID and SpanID require.
func idField(start, end, size int, name string) (uint32, error) {
	switch end - start {
	case 0:
		return 0, nil
	case size:
		return uint32(start), nil
	}
	return 0, malformed(start, name+" of the wrong length")
}

func refOf(start, end int) ref { return ref{off: uint32(start), n: uint32(end - start)} }
