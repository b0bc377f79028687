package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

import "encoding/binary"

// The protobuf wire primitives, with exactly the acceptance rules of pdata's unmarshaler
// (go.opentelemetry.io/collector/pdata/internal/proto), which are not protobuf-go's in three
// places: a tenth varint byte may carry any bits (protobuf-go refuses more than one), field
// numbers are the tag's bits above the third truncated to int32 (so a huge tag can name a
// known field), and unknown groups end at their first non-group field (see skipField).
//
// Every function reads b from pos and treats len(b) as the end of the enclosing message:
// callers pass the request sliced to the message's end, never re-based, so positions stay
// offsets into the request and errors say where they happened.
//
// The readers return the next position, or -1 where the bytes are refused, and build no
// error: building one (or even returning an error value) keeps them from being inlined, and
// they run several times per attribute. The failure paths call the *Error functions, which
// read the same bytes again and say what was wrong.

const (
	wireVarint     = 0
	wireI64        = 1
	wireLen        = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireI32        = 5
)

// readVarint reads a varint of up to ten bytes. The one-byte case is split out so that it
// inlines: most tags, lengths and enums are one byte.
func readVarint(b []byte, pos int) (uint64, int) {
	if uint(pos) < uint(len(b)) {
		if c := b[pos]; c < 0x80 {
			return uint64(c), pos + 1
		}
	}
	return readVarintSlow(b, pos)
}

func readVarintSlow(b []byte, pos int) (uint64, int) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if pos >= len(b) {
			return 0, -1
		}
		c := b[pos]
		pos++
		// At shift 63 only the lowest bit survives; pdata drops the rest silently.
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, pos
		}
	}
	return 0, -1
}

func varintError(b []byte, pos int) error {
	if len(b)-pos < 10 {
		return malformed(pos, "truncated varint")
	}
	return malformed(pos, "varint longer than ten bytes")
}

// readTag reads a field tag. Fields 1 to 15 have one-byte tags: that case inlines.
func readTag(b []byte, pos int) (field int32, wire int, next int) {
	if uint(pos) < uint(len(b)) {
		if c := b[pos]; c < 0x80 && c >= 8 {
			return int32(c >> 3), int(c & 7), pos + 1
		}
	}
	return readTagSlow(b, pos)
}

func readTagSlow(b []byte, pos int) (field int32, wire int, next int) {
	v, next := readVarintSlow(b, pos)
	field = int32(v >> 3)
	if next < 0 || field <= 0 {
		return 0, 0, -1
	}
	return field, int(v & 7), next
}

func tagError(b []byte, pos int) error {
	if _, next := readVarint(b, pos); next < 0 {
		return varintError(b, pos)
	}
	return malformed(pos, "field number 0 or out of range")
}

// readLen reads a length prefix and returns where the payload starts and ends (-1).
// Lengths under 128 have one byte: that case inlines.
func readLen(b []byte, pos int) (start, end int) {
	if uint(pos) < uint(len(b)) {
		if n := int(b[pos]); n < 0x80 && n <= len(b)-pos-1 {
			return pos + 1, pos + 1 + n
		}
	}
	return readLenSlow(b, pos)
}

func readLenSlow(b []byte, pos int) (start, end int) {
	n, start := readVarintSlow(b, pos)
	// pdata refuses a length that is negative as an int, overflows the position, or runs
	// past the end; comparing as unsigned against what is left covers all three.
	if start < 0 || n > uint64(len(b)-start) {
		return 0, -1
	}
	return start, start + int(n)
}

func lenError(b []byte, pos int) error {
	if _, next := readVarint(b, pos); next < 0 {
		return varintError(b, pos)
	}
	return malformed(pos, "length past the end of the message")
}

func readFixed64(b []byte, pos int) (uint64, int) {
	if len(b)-pos < 8 {
		return 0, -1
	}
	return binary.LittleEndian.Uint64(b[pos:]), pos + 8
}

func readFixed32(b []byte, pos int) (uint32, int) {
	if len(b)-pos < 4 {
		return 0, -1
	}
	return binary.LittleEndian.Uint32(b[pos:]), pos + 4
}

// payloadError explains why the payload of wire type wire at pos was refused.
func payloadError(b []byte, pos, wire int) error {
	switch wire {
	case wireVarint:
		return varintError(b, pos)
	case wireLen:
		return lenError(b, pos)
	case wireI64:
		return malformed(pos, "truncated fixed64")
	case wireI32:
		return malformed(pos, "truncated fixed32")
	}
	return malformed(pos, "illegal wire type")
}

// skipField skips the payload of an unknown field whose tag has been read, as pdata's
// ConsumeUnknown does, quirks included, because a request pdata accepts must be accepted and
// one it refuses refused:
//   - every step first requires a byte left: an empty group that closes exactly at the end
//     of its message is refused, the same group followed by anything is not;
//   - inside a group the first field that is not itself a group start or end ends the skip
//     (pdata returns there), so the rest of the group is read as fields of the enclosing
//     message, and its end-group tag is then refused there as a wrong wire type or a stray
//     end-group; a group never closed is accepted;
//   - the field numbers of start and end tags are not compared.
//
// Unknown fields are rare, so it builds its error itself.
func skipField(b []byte, pos int, wire int) (int, error) {
	depth := 0
	for pos < len(b) {
		next := -1
		switch wire {
		case wireVarint:
			_, next = readVarint(b, pos)
		case wireI64:
			_, next = readFixed64(b, pos)
		case wireLen:
			_, next = readLen(b, pos)
		case wireI32:
			_, next = readFixed32(b, pos)
		case wireStartGroup:
			depth++
		case wireEndGroup:
			if depth == 0 {
				return 0, malformed(pos, "end-group without a start")
			}
			depth--
		default:
			return 0, malformed(pos, "illegal wire type")
		}
		if wire != wireStartGroup && wire != wireEndGroup {
			if next < 0 {
				return 0, payloadError(b, pos, wire)
			}
			return next, nil
		}
		if depth == 0 {
			return pos, nil
		}
		tagPos := pos
		if _, wire, pos = readTag(b, pos); pos < 0 {
			return 0, tagError(b, tagPos)
		}
	}
	return 0, malformed(pos, "truncated unknown field")
}
