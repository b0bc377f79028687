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
func readVarint(b []byte, pos int) (uint64, int, error) {
	if pos < len(b) && b[pos] < 0x80 {
		return uint64(b[pos]), pos + 1, nil
	}
	return readVarintSlow(b, pos)
}

func readVarintSlow(b []byte, pos int) (uint64, int, error) {
	start := pos
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		if pos >= len(b) {
			return 0, 0, malformed(start, "truncated varint")
		}
		c := b[pos]
		pos++
		// At shift 63 only the lowest bit survives; pdata drops the rest silently.
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, pos, nil
		}
	}
	return 0, 0, malformed(start, "varint longer than ten bytes")
}

// readTag reads a field tag.
func readTag(b []byte, pos int) (field int32, wire int, next int, err error) {
	v, next, err := readVarint(b, pos)
	if err != nil {
		return 0, 0, 0, err
	}
	field = int32(v >> 3)
	if field <= 0 {
		return 0, 0, 0, malformed(pos, "field number 0 or out of range")
	}
	return field, int(v & 7), next, nil
}

// readLen reads a length prefix and returns where the payload starts and ends.
func readLen(b []byte, pos int) (start, end int, err error) {
	n, start, err := readVarint(b, pos)
	if err != nil {
		return 0, 0, err
	}
	// pdata refuses a length that is negative as an int, overflows the position, or runs
	// past the end; comparing as unsigned against what is left covers all three.
	if n > uint64(len(b)-start) {
		return 0, 0, malformed(pos, "length past the end of the message")
	}
	return start, start + int(n), nil
}

func readFixed64(b []byte, pos int) (uint64, int, error) {
	if len(b)-pos < 8 {
		return 0, 0, malformed(pos, "truncated fixed64")
	}
	return binary.LittleEndian.Uint64(b[pos:]), pos + 8, nil
}

func readFixed32(b []byte, pos int) (uint32, int, error) {
	if len(b)-pos < 4 {
		return 0, 0, malformed(pos, "truncated fixed32")
	}
	return binary.LittleEndian.Uint32(b[pos:]), pos + 4, nil
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
func skipField(b []byte, pos int, wire int) (int, error) {
	var err error
	depth := 0
	for pos < len(b) {
		switch wire {
		case wireVarint:
			_, pos, err = readVarint(b, pos)
			return pos, err
		case wireI64:
			_, pos, err = readFixed64(b, pos)
			return pos, err
		case wireLen:
			_, pos, err = readLen(b, pos)
			return pos, err
		case wireI32:
			_, pos, err = readFixed32(b, pos)
			return pos, err
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
		if depth == 0 {
			return pos, nil
		}
		_, wire, pos, err = readTag(b, pos)
		if err != nil {
			return 0, err
		}
	}
	return 0, malformed(pos, "truncated unknown field")
}
