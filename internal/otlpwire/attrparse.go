package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// Validation of attribute key-values and their (possibly nested) values. Decode validates
// every value down to its leaves, so that a request is refused exactly when pdata refuses
// it; the nested contents are not indexed, the views read them again lazily (resolve.go).

// pdataRecursionLimit is pdata's proto.RecursionLimit: a KeyValue, AnyValue, ArrayValue or
// KeyValueList message entered at this depth below an attribute is refused.
const pdataRecursionLimit = 100

// parseAttribute validates the KeyValue message b[pos:] of an attribute list (depth 0) and
// resolves its key and value.
func parseAttribute(b []byte, pos, maxNesting int) (kvRec, error) {
	return keyValue(b, pos, 0, 0, maxNesting)
}

// keyValue validates a KeyValue entered at pdata recursion depth depth, inside nesting
// arrays and maps. The key is the last key field; the value is the last oneof field of all
// the value fields (pdata merges repeated value messages into one AnyValue, in which each
// oneof field replaces the previous one; a value message without one changes nothing).
func keyValue(b []byte, pos, depth, nesting, maxNesting int) (kv kvRec, err error) {
	if depth >= pdataRecursionLimit {
		return kv, malformed(pos, "KeyValue beyond pdata's recursion limit")
	}
	depth++
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return kv, tagError(b, pos)
		}
		switch field {
		case 1:
			s, e := lenField(b, next, wire)
			kv.key, next = refOf(s, e), e
		case 2:
			s, e := lenField(b, next, wire)
			if e >= 0 {
				typ, num, set, err := anyValue(b[:e], s, depth, nesting, maxNesting)
				if err != nil {
					return kv, err
				}
				if set {
					kv.typ, kv.num = typ, num
				}
			}
			next = e
		case 3: // key_strindex: profiles only; pdata keeps it but no Map accessor shows it
			_, next = varintField(b, next, wire)
		default:
			if next, err = skipField(b, next, wire); err != nil {
				return kv, err
			}
		}
		if next < 0 {
			return kv, fieldError(b, pos, keyValueSchema)
		}
		pos = next
	}
	return kv, nil
}

// anyValue validates an AnyValue entered at depth and returns its last oneof field; set is
// false when it has none. string_value_strindex (field 8, profiles only) is a oneof member
// that pcommon.Value shows as empty: it yields ValueTypeEmpty, replacing what came before.
func anyValue(b []byte, pos, depth, nesting, maxNesting int) (typ ValueType, num uint64, set bool, err error) {
	if depth >= pdataRecursionLimit {
		return 0, 0, false, malformed(pos, "AnyValue beyond pdata's recursion limit")
	}
	depth++
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return 0, 0, false, tagError(b, pos)
		}
		var s, e int
		var v uint64
		switch field {
		case 1:
			s, e = lenField(b, next, wire)
			typ, num, next = ValueTypeStr, packRef(s, e), e
		case 2:
			v, next = varintField(b, next, wire)
			typ, num = ValueTypeBool, 0
			if v != 0 {
				num = 1
			}
		case 3:
			typ = ValueTypeInt
			num, next = varintField(b, next, wire)
		case 4:
			typ = ValueTypeDouble
			num, next = fixed64Field(b, next, wire)
		case 5:
			if s, e = lenField(b, next, wire); e >= 0 {
				if err = arrayValue(b[:e], s, depth, nesting+1, maxNesting); err != nil {
					return 0, 0, false, err
				}
			}
			typ, num, next = ValueTypeSlice, packRef(s, e), e
		case 6:
			if s, e = lenField(b, next, wire); e >= 0 {
				if err = keyValueList(b[:e], s, depth, nesting+1, maxNesting); err != nil {
					return 0, 0, false, err
				}
			}
			typ, num, next = ValueTypeMap, packRef(s, e), e
		case 7:
			s, e = lenField(b, next, wire)
			typ, num, next = ValueTypeBytes, packRef(s, e), e
		case 8:
			typ, num = ValueTypeEmpty, 0
			_, next = varintField(b, next, wire)
		default:
			if pos, err = skipField(b, next, wire); err != nil {
				return 0, 0, false, err
			}
			continue
		}
		if next < 0 {
			return 0, 0, false, fieldError(b, pos, anyValueSchema)
		}
		pos, set = next, true
	}
	return typ, num, set, nil
}

// arrayValue validates an ArrayValue: each values field is an AnyValue.
func arrayValue(b []byte, pos, depth, nesting, maxNesting int) error {
	if depth >= pdataRecursionLimit {
		return malformed(pos, "ArrayValue beyond pdata's recursion limit")
	}
	if nesting > maxNesting {
		return tooDeep(pos)
	}
	depth++
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		var err error
		if field != 1 {
			if pos, err = skipField(b, next, wire); err != nil {
				return err
			}
			continue
		}
		s, e := lenField(b, next, wire)
		if e < 0 {
			return fieldError(b, pos, arrayValueSchema)
		}
		if _, _, _, err = anyValue(b[:e], s, depth, nesting, maxNesting); err != nil {
			return err
		}
		pos = e
	}
	return nil
}

// keyValueList validates a KeyValueList: each values field is a KeyValue.
func keyValueList(b []byte, pos, depth, nesting, maxNesting int) error {
	if depth >= pdataRecursionLimit {
		return malformed(pos, "KeyValueList beyond pdata's recursion limit")
	}
	if nesting > maxNesting {
		return tooDeep(pos)
	}
	depth++
	for pos < len(b) {
		field, wire, next := readTag(b, pos)
		if next < 0 {
			return tagError(b, pos)
		}
		var err error
		if field != 1 {
			if pos, err = skipField(b, next, wire); err != nil {
				return err
			}
			continue
		}
		s, e := lenField(b, next, wire)
		if e < 0 {
			return fieldError(b, pos, keyValueListSchema)
		}
		if _, err = keyValue(b[:e], s, depth, nesting, maxNesting); err != nil {
			return err
		}
		pos = e
	}
	return nil
}

func packRef(start, end int) uint64 { return uint64(start)<<32 | uint64(end-start) }

func unpackRef(num uint64) ref { return ref{off: uint32(num >> 32), n: uint32(num)} }
