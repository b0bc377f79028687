package otlpwire

import (
	"bytes"
	"strconv"
)

// Hand-made requests: what no encoder of ours writes but the wire allows or a hostile sender
// may try. Each names what pdata does with it (accept/refuse), which the differential test
// checks pdata still does, so that a case never silently stops testing what it says.

type rawCase struct {
	name   string
	data   []byte
	accept bool // what pdata's ProtoUnmarshaler does with it
}

// Wrappers that put a message's payload at its place in a request.
func inRS(p []byte) []byte         { return pbBytes(nil, 1, p) }
func inResource(p []byte) []byte   { return inRS(pbBytes(nil, 1, p)) }
func inEntityRef(p []byte) []byte  { return inResource(pbBytes(nil, 3, p)) }
func inScopeSpans(p []byte) []byte { return inRS(pbBytes(nil, 2, p)) }
func inScope(p []byte) []byte      { return inScopeSpans(pbBytes(nil, 1, p)) }
func inSpan(p []byte) []byte       { return inScopeSpans(pbBytes(nil, 2, p)) }
func inStatus(p []byte) []byte     { return inSpan(pbBytes(nil, 15, p)) }
func inEvent(p []byte) []byte      { return inSpan(pbBytes(nil, 11, p)) }
func inLink(p []byte) []byte       { return inSpan(pbBytes(nil, 13, p)) }
func inSpanKV(p []byte) []byte     { return inSpan(pbBytes(nil, 9, p)) }
func inAnyValue(p []byte) []byte   { return inSpanKV(pbBytes(pbString(nil, 1, "k"), 2, p)) }
func inArray(p []byte) []byte      { return inAnyValue(pbBytes(nil, 5, p)) }
func inKVList(p []byte) []byte     { return inAnyValue(pbBytes(nil, 6, p)) }
func inNestedKV(p []byte) []byte   { return inKVList(pbBytes(nil, 1, p)) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// message lists each message's known fields and their wire types, and where it sits.
type message struct {
	name   string
	wrap   func([]byte) []byte
	fields map[int]int
}

var messages = []message{
	{"request", func(p []byte) []byte { return p }, map[int]int{1: wireLen}},
	{"resource_spans", inRS, map[int]int{1: wireLen, 2: wireLen, 3: wireLen, 1000: wireLen}},
	{"resource", inResource, map[int]int{1: wireLen, 2: wireVarint, 3: wireLen}},
	{"entity_ref", inEntityRef, map[int]int{1: wireLen, 2: wireLen, 3: wireLen, 4: wireLen}},
	{"scope_spans", inScopeSpans, map[int]int{1: wireLen, 2: wireLen, 3: wireLen}},
	{"scope", inScope, map[int]int{1: wireLen, 2: wireLen, 3: wireLen, 4: wireVarint}},
	{"span", inSpan, map[int]int{1: wireLen, 2: wireLen, 3: wireLen, 4: wireLen, 5: wireLen, 6: wireVarint,
		7: wireI64, 8: wireI64, 9: wireLen, 10: wireVarint, 11: wireLen, 12: wireVarint, 13: wireLen,
		14: wireVarint, 15: wireLen, 16: wireI32}},
	{"status", inStatus, map[int]int{2: wireLen, 3: wireVarint}},
	{"event", inEvent, map[int]int{1: wireI64, 2: wireLen, 3: wireLen, 4: wireVarint}},
	{"link", inLink, map[int]int{1: wireLen, 2: wireLen, 3: wireLen, 4: wireLen, 5: wireVarint, 6: wireI32}},
	{"key_value", inSpanKV, map[int]int{1: wireLen, 2: wireLen, 3: wireVarint}},
	{"any_value", inAnyValue, map[int]int{1: wireLen, 2: wireVarint, 3: wireVarint, 4: wireI64, 5: wireLen,
		6: wireLen, 7: wireLen, 8: wireVarint}},
	{"array_value", inArray, map[int]int{1: wireLen}},
	{"kvlist_value", inKVList, map[int]int{1: wireLen}},
	{"nested_key_value", inNestedKV, map[int]int{1: wireLen, 2: wireLen, 3: wireVarint}},
}

// field writes field with a well-formed minimal payload of the given wire type (a group is
// a start and an end tag), so that only the wire type can be wrong.
func field(num, wire int) []byte {
	b := pbTag(nil, num, wire)
	switch wire {
	case wireVarint:
		return append(b, 1)
	case wireI64:
		return append(b, 1, 2, 3, 4, 5, 6, 7, 8)
	case wireLen:
		return append(b, 0)
	case wireI32:
		return append(b, 1, 2, 3, 4)
	case wireStartGroup:
		return pbTag(b, num, wireEndGroup)
	}
	return b
}

func rawCorpus() []rawCase {
	var cs []rawCase
	add := func(name string, accept bool, data []byte) {
		cs = append(cs, rawCase{name: name, data: data, accept: accept})
	}
	tid1, tid2 := bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 16)
	sid1 := bytes.Repeat([]byte{3}, 8)
	name := pbString(nil, 5, "n") // a span field that follows to show what a quirk left behind

	for _, m := range messages {
		for num, want := range m.fields {
			add(m.name+"/field-"+strconv.Itoa(num)+"/ok", true, m.wrap(field(num, want)))
			for _, wire := range []int{wireVarint, wireI64, wireLen, wireI32, wireStartGroup} {
				if wire != want {
					add(m.name+"/field-"+strconv.Itoa(num)+"/wire-"+strconv.Itoa(wire), false, m.wrap(field(num, wire)))
				}
			}
		}
		// unknown fields of every wire type, before and after a known one, and a field
		// number at the top of the range
		unknown := cat(field(900, wireVarint), field(901, wireI64), field(902, wireLen), field(903, wireI32),
			field(904, wireStartGroup), field(536870911, wireVarint))
		add(m.name+"/unknown-fields", true, m.wrap(cat(unknown, field(1, m.fields[1]), unknown)))
		add(m.name+"/wire-type-6", false, m.wrap(cat(pbTag(nil, 905, 6), []byte{1})))
		add(m.name+"/wire-type-7", false, m.wrap(cat(pbTag(nil, 905, 7), []byte{1})))
		add(m.name+"/stray-end-group", false, m.wrap(cat(pbTag(nil, 905, wireEndGroup), name)))
		add(m.name+"/field-zero", false, m.wrap(cat([]byte{0x02, 0x00})))
		add(m.name+"/group-at-end", false, m.wrap(field(906, wireStartGroup)))
		add(m.name+"/truncated-tag", false, m.wrap([]byte{0x80}))
		add(m.name+"/length-past-end", false, m.wrap([]byte{0x0a, 0x05, 'a'}))
	}

	// Repeated non-repeated fields: scalars last-wins, embedded messages merged.
	add("span/last-wins", true, inSpan(cat(pbBytes(nil, 1, tid1), pbString(nil, 5, "first"), pbUint(nil, 6, 2),
		pbFixed64(nil, 7, 10), pbFixed32(nil, 16, 1), pbBytes(nil, 1, tid2), pbString(nil, 5, "second"),
		pbUint(nil, 6, 3), pbFixed64(nil, 7, 20), pbFixed32(nil, 16, 2), pbString(nil, 3, "a=1"), pbString(nil, 3, ""))))
	add("span/trace-id-reset", true, inSpan(cat(pbBytes(nil, 1, tid1), pbBytes(nil, 1, nil), pbBytes(nil, 2, sid1))))
	add("span/status-merge", true, inSpan(cat(pbBytes(nil, 15, pbUint(nil, 3, 2)), name,
		pbBytes(nil, 15, pbString(nil, 2, "msg")), pbBytes(nil, 15, nil))))
	add("span/status-deprecated-code", true, inSpan(pbBytes(nil, 15, cat(pbUint(nil, 1, 2), pbUint(nil, 3, 1)))))
	add("resource/merge", true, inRS(cat(pbBytes(nil, 1, pbBytes(nil, 1, pbString(nil, 1, "a"))),
		pbBytes(nil, 2, pbBytes(nil, 2, name)),
		pbBytes(nil, 1, cat(pbUint(nil, 2, 3), pbBytes(nil, 1, pbString(nil, 1, "b")))))))
	add("scope/merge", true, inScopeSpans(cat(pbBytes(nil, 1, cat(pbString(nil, 1, "n1"), pbBytes(nil, 3, pbString(nil, 1, "x")))),
		pbBytes(nil, 2, name), pbBytes(nil, 1, pbString(nil, 2, "v")), pbBytes(nil, 2, name),
		pbBytes(nil, 1, cat(pbString(nil, 1, "n2"), pbBytes(nil, 3, pbString(nil, 1, "y")))))))
	kv := func(parts ...[]byte) []byte { return inSpanKV(cat(parts...)) }
	val := func(parts ...[]byte) []byte { return pbBytes(nil, 2, cat(parts...)) }
	key := pbString(nil, 1, "k")
	add("value/replaced-by-later", true, kv(key, val(pbString(nil, 1, "a")), val(pbUint(nil, 3, 3))))
	add("value/kept-over-empty", true, kv(key, val(pbString(nil, 1, "a")), val(), val(field(900, wireVarint))))
	add("value/last-oneof-in-one", true, kv(key, val(pbString(nil, 1, "a"), pbUint(nil, 3, 1), pbString(nil, 1, "b"))))
	add("value/array-then-string", true, kv(key, val(pbBytes(nil, 5, pbBytes(nil, 1, pbUint(nil, 3, 1))), pbString(nil, 1, "s"))))
	add("value/strindex-empties", true, kv(key, val(pbString(nil, 1, "a"), pbUint(nil, 8, 3))))
	add("value/strindex-then-bool", true, kv(key, val(pbUint(nil, 8, 3)), val(pbUint(nil, 2, 7))))
	add("value/array-replaced", true, kv(key, val(pbBytes(nil, 5, cat(pbBytes(nil, 1, pbUint(nil, 3, 1)), pbBytes(nil, 1, pbUint(nil, 3, 2))))),
		val(pbBytes(nil, 5, pbBytes(nil, 1, pbUint(nil, 3, 3))))))
	add("value/key-last-wins", true, kv(key, val(pbUint(nil, 3, 1)), pbString(nil, 1, "k2"), pbUint(nil, 3, 9)))
	add("value/empty-kv", true, kv())
	add("value/bool-big", true, kv(key, val(pbUint(nil, 2, 1<<40))))
	dup := cat(pbBytes(nil, 9, cat(key, val(pbUint(nil, 3, 1)))), pbBytes(nil, 9, cat(key, val(pbUint(nil, 3, 2)))))
	add("attrs/duplicate-keys", true, inSpan(dup))
	entry := func(k string, v []byte) []byte { return pbBytes(nil, 1, cat(pbString(nil, 1, k), val(v))) }
	add("map/duplicate-keys", true, kv(key, val(pbBytes(nil, 6, cat(entry("b", pbUint(nil, 3, 1)), entry("a", pbUint(nil, 3, 2)),
		entry("b", pbString(nil, 1, "x")), entry("a", pbBytes(nil, 7, nil)))))))
	add("map/entry-without-value", true, kv(key, val(pbBytes(nil, 6, pbBytes(nil, 1, pbString(nil, 1, "only-key"))))))
	add("array/unknown-and-empty-elements", true, kv(key, val(pbBytes(nil, 5, cat(pbBytes(nil, 1, nil), field(7, wireI32),
		pbBytes(nil, 1, pbUint(nil, 3, 5)), field(8, wireStartGroup), pbBytes(nil, 1, nil))))))

	// pdata's group skipping (see skipField).
	add("group/empty-then-field", true, inSpan(cat(field(100, wireStartGroup), name)))
	add("group/nested-then-field", true, inSpan(cat(pbTag(nil, 100, wireStartGroup), field(101, wireStartGroup),
		pbTag(nil, 100, wireEndGroup), name)))
	add("group/ends-at-first-field", true, inSpan(cat(pbTag(nil, 100, wireStartGroup), pbUint(nil, 101, 5), name)))
	add("group/closed-after-field", false, inSpan(cat(pbTag(nil, 100, wireStartGroup), pbUint(nil, 101, 5),
		pbTag(nil, 100, wireEndGroup), name)))
	add("group/inner-field-is-known", true, inSpan(cat(pbTag(nil, 100, wireStartGroup), pbUint(nil, 101, 5),
		pbString(nil, 5, "read-as-span-name"))))
	add("group/mismatched-numbers", true, inSpan(cat(pbTag(nil, 100, wireStartGroup), pbTag(nil, 7, wireEndGroup), name)))
	add("group/known-field-end", false, inSpan(cat(pbTag(nil, 100, wireStartGroup), pbUint(nil, 101, 5), pbTag(nil, 5, wireEndGroup))))

	// Varints and tags.
	tenBytes := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}
	add("varint/ten-bytes-high-bits", true, inSpan(cat(pbTag(nil, 6, wireVarint), tenBytes, name)))
	add("varint/eleven-bytes", false, inSpan(cat(pbTag(nil, 6, wireVarint), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})))
	add("varint/non-minimal-length", true, inSpan(cat(pbTag(nil, 5, wireLen), []byte{0x82, 0x80, 0x80, 0x00}, []byte("ab"))))
	add("varint/kind-truncated-to-int32", true, inSpan(pbUint(nil, 6, 1<<32|2)))
	add("varint/kind-negative", true, inSpan(pbUint(nil, 6, 1<<31)))
	add("varint/status-code-minus-one", true, inStatus(pbUint(nil, 3, 1<<64-1)))
	add("tag/field-number-truncated-to-known", true, inSpan(cat(pbVarint(nil, (1<<32|5)<<3|wireLen), []byte{1, 'x'})))
	add("tag/field-number-negative", false, inSpan(cat(pbVarint(nil, (1<<31)<<3|wireVarint), []byte{1})))
	add("tag/field-number-zero-after-truncation", false, inSpan(cat(pbVarint(nil, (1<<32)<<3|wireVarint), []byte{1})))
	add("length/huge", false, inSpan(cat(pbTag(nil, 5, wireLen), pbVarint(nil, 1<<63))))
	add("length/max-uint64", false, inSpan(cat(pbTag(nil, 5, wireLen), pbVarint(nil, 1<<64-1))))
	add("fixed64/truncated", false, inSpan(cat(pbTag(nil, 7, wireI64), []byte{1, 2, 3})))
	add("fixed32/truncated", false, inSpan(cat(pbTag(nil, 16, wireI32), []byte{1, 2, 3})))

	// IDs.
	add("id/trace-15", false, inSpan(pbBytes(nil, 1, tid1[:15])))
	add("id/trace-17", false, inSpan(pbBytes(nil, 1, append(tid1[:16:16], 0))))
	add("id/span-9", false, inSpan(pbBytes(nil, 2, append(sid1[:8:8], 0))))
	add("id/parent-7", false, inSpan(pbBytes(nil, 4, sid1[:7])))
	add("id/link-trace-1", false, inLink(pbBytes(nil, 1, []byte{1})))
	add("id/link-span-empty", true, inLink(cat(pbBytes(nil, 1, tid1), pbBytes(nil, 2, nil))))

	// ResourceSpans field 1000, the deprecated instrumentation_library_spans.
	scopeWith := func(n string) []byte { return cat(pbBytes(nil, 1, pbString(nil, 1, n)), pbBytes(nil, 2, name)) }
	add("deprecated/only", true, inRS(pbBytes(nil, 1000, scopeWith("old"))))
	add("deprecated/and-current", true, inRS(cat(pbBytes(nil, 1000, scopeWith("old")), pbBytes(nil, 2, scopeWith("new")))))
	add("deprecated/interleaved", true, inRS(cat(pbBytes(nil, 2, scopeWith("a")), pbBytes(nil, 1000, scopeWith("old")),
		pbBytes(nil, 2, scopeWith("b")), pbBytes(nil, 1000, scopeWith("old2")))))
	add("deprecated/empty-current", true, inRS(cat(pbBytes(nil, 2, nil), pbBytes(nil, 1000, scopeWith("old")))))
	add("deprecated/malformed", false, inRS(cat(pbBytes(nil, 2, scopeWith("a")), pbBytes(nil, 1000, pbBytes(nil, 2, []byte{0x0a, 0x03})))))
	add("deprecated/two-resources", true, cat(inRS(pbBytes(nil, 1000, scopeWith("old"))), inRS(pbBytes(nil, 2, scopeWith("new"))),
		inRS(pbBytes(nil, 1000, scopeWith("old3")))))

	// Nesting at pdata's recursion limit, on each path.
	add("depth/arrays-49", true, deepValue(49, 0, true))
	add("depth/arrays-50", false, deepValue(50, 0, true))
	add("depth/arrays-50-empty", false, deepValue(50, 0, false))
	add("depth/maps-32", true, deepValue(0, 32, true))
	add("depth/maps-33-key-only", true, deepValue(0, 33, false))
	add("depth/maps-33-value", false, deepValue(0, 33, true))
	add("depth/maps-34-key-only", false, deepValue(0, 34, false))
	add("depth/mixed-20-maps-19-arrays", true, deepValue(19, 20, true))
	add("depth/mixed-20-maps-20-arrays", false, deepValue(20, 20, true))

	// Outer levels.
	add("request/empty", true, nil)
	add("request/only-unknown", true, cat(field(2, wireVarint), field(3, wireLen)))
	add("request/empty-resource-spans", true, cat(pbBytes(nil, 1, nil), pbBytes(nil, 1, nil)))
	return cs
}

// deepValue nests maps (outside) and arrays (inside) around an innermost value: a string
// when leaf is true, nothing (an empty array, or a map entry without a value) when false.
func deepValue(arrays, maps int, leaf bool) []byte {
	var v []byte // an AnyValue payload
	if leaf {
		v = pbString(nil, 1, "leaf")
	}
	for i := range arrays {
		if i == 0 && !leaf {
			v = pbBytes(nil, 5, nil)
			continue
		}
		v = pbBytes(nil, 5, pbBytes(nil, 1, v))
	}
	for i := range maps {
		entry := pbString(nil, 1, "k")
		if i > 0 || leaf || arrays > 0 {
			entry = append(entry, pbBytes(nil, 2, v)...)
		}
		v = pbBytes(nil, 6, pbBytes(nil, 1, entry))
	}
	return inAnyValue(v)
}
