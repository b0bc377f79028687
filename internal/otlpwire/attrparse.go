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
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return kv, err
		}
		switch field {
		case 1:
			s, e, err := lenField(b, pos, next, wire, "KeyValue.key")
			if err != nil {
				return kv, err
			}
			kv.key = refOf(s, e)
			pos = e
		case 2:
			s, e, err := lenField(b, pos, next, wire, "KeyValue.value")
			if err != nil {
				return kv, err
			}
			typ, num, set, err := anyValue(b[:e], s, depth, nesting, maxNesting)
			if err != nil {
				return kv, err
			}
			if set {
				kv.typ, kv.num = typ, num
			}
			pos = e
		case 3: // key_strindex: profiles only; pdata keeps it but no Map accessor shows it
			_, pos, err = varintField(b, pos, next, wire, "KeyValue.key_strindex")
		default:
			pos, err = skipField(b, next, wire)
		}
		if err != nil {
			return kv, err
		}
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
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return 0, 0, false, err
		}
		var s, e int
		var v uint64
		switch field {
		case 1:
			if s, e, err = lenField(b, pos, next, wire, "AnyValue.string_value"); err == nil {
				typ, num, pos = ValueTypeStr, packRef(s, e), e
			}
		case 2:
			if v, pos, err = varintField(b, pos, next, wire, "AnyValue.bool_value"); err == nil {
				typ, num = ValueTypeBool, 0
				if v != 0 {
					num = 1
				}
			}
		case 3:
			if v, pos, err = varintField(b, pos, next, wire, "AnyValue.int_value"); err == nil {
				typ, num = ValueTypeInt, v
			}
		case 4:
			if v, pos, err = fixed64Field(b, pos, next, wire, "AnyValue.double_value"); err == nil {
				typ, num = ValueTypeDouble, v
			}
		case 5:
			if s, e, err = lenField(b, pos, next, wire, "AnyValue.array_value"); err == nil {
				if err = arrayValue(b[:e], s, depth, nesting+1, maxNesting); err == nil {
					typ, num, pos = ValueTypeSlice, packRef(s, e), e
				}
			}
		case 6:
			if s, e, err = lenField(b, pos, next, wire, "AnyValue.kvlist_value"); err == nil {
				if err = keyValueList(b[:e], s, depth, nesting+1, maxNesting); err == nil {
					typ, num, pos = ValueTypeMap, packRef(s, e), e
				}
			}
		case 7:
			if s, e, err = lenField(b, pos, next, wire, "AnyValue.bytes_value"); err == nil {
				typ, num, pos = ValueTypeBytes, packRef(s, e), e
			}
		case 8:
			if _, pos, err = varintField(b, pos, next, wire, "AnyValue.string_value_strindex"); err == nil {
				typ, num = ValueTypeEmpty, 0
			}
		default:
			pos, err = skipField(b, next, wire)
			if err != nil {
				return 0, 0, false, err
			}
			continue
		}
		if err != nil {
			return 0, 0, false, err
		}
		set = true
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
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		if field != 1 {
			if pos, err = skipField(b, next, wire); err != nil {
				return err
			}
			continue
		}
		s, e, err := lenField(b, pos, next, wire, "ArrayValue.values")
		if err != nil {
			return err
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
		field, wire, next, err := readTag(b, pos)
		if err != nil {
			return err
		}
		if field != 1 {
			if pos, err = skipField(b, next, wire); err != nil {
				return err
			}
			continue
		}
		s, e, err := lenField(b, pos, next, wire, "KeyValueList.values")
		if err != nil {
			return err
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
