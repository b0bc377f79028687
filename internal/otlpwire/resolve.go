package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

import "strconv"

// Reading nested values again, lazily, from bytes Decode has validated: the views of arrays
// and maps come here. Nothing below can fail on validated bytes; a failure means the request
// was modified after Decode (or a bug here), and panics rather than yield a wrong value.

func bug(pos int) {
	panic("BUG: otlpwire: validated bytes no longer decode at offset " + strconv.Itoa(pos) +
		" (was the request modified after Decode?)")
}

// resolveAnyValue returns the last oneof field of the AnyValue b[pos:] as anyValue does,
// without descending into arrays and maps; set is false (and typ ValueTypeEmpty) when it has
// none.
func resolveAnyValue(b []byte, pos int) (typ ValueType, num uint64, set bool) {
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			bug(pos)
		}
		var s, e int
		var v uint64
		switch field {
		case 1, 5, 6, 7:
			s, e = readLen(b, next)
			typ, num, next = lenValueType[field], packRef(s, e), e
		case 2:
			v, next = readVarint(b, next)
			typ, num = ValueTypeBool, 0
			if v != 0 {
				num = 1
			}
		case 3:
			typ = ValueTypeInt
			num, next = readVarint(b, next)
		case 4:
			typ = ValueTypeDouble
			num, next = readFixed64(b, next)
		case 8:
			typ, num = ValueTypeEmpty, 0
			_, next = readVarint(b, next)
		default:
			var err error
			if pos, err = skipField(b, next, wire); err != nil {
				bug(next)
			}
			continue
		}
		if next < 0 {
			bug(pos)
		}
		pos, set = next, true
	}
	return typ, num, set
}

// lenValueType maps the length-delimited AnyValue fields to their types.
var lenValueType = [8]ValueType{1: ValueTypeStr, 5: ValueTypeSlice, 6: ValueTypeMap, 7: ValueTypeBytes}

// resolveKeyValue returns the key and merged value of the KeyValue b[pos:], as keyValue
// resolves them.
func resolveKeyValue(b []byte, pos int) (key ref, typ ValueType, num uint64) {
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			bug(pos)
		}
		switch field {
		case 1:
			s, e := readLen(b, next)
			key, next = refOf(s, e), e
		case 2:
			s, e := readLen(b, next)
			if e >= 0 {
				if t, n, set := resolveAnyValue(b[:e], s); set {
					typ, num = t, n
				}
			}
			next = e
		default:
			var err error
			if next, err = skipField(b, next, wire); err != nil {
				bug(pos)
			}
		}
		if next < 0 {
			bug(pos)
		}
		pos = next
	}
	return key, typ, num
}

// nextElement finds the next field 1 (the repeated field of ArrayValue and KeyValueList)
// in b from pos and returns its payload; ok is false at the end.
func nextElement(b []byte, pos int) (start, end int, ok bool) {
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			bug(pos)
		}
		if field == 1 {
			if start, end = readLen(b, next); end < 0 {
				bug(pos)
			}
			return start, end, true
		}
		var err error
		if pos, err = skipField(b, next, wire); err != nil {
			bug(next)
		}
	}
	return 0, 0, false
}
