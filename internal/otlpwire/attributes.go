package otlpwire // import "github.com/otelcol-red/otelcol-red/internal/otlpwire"

// Attributes is a view of one attribute list (a resource's, a scope's, a span's, an event's
// or a link's), indexed by Decode: At and Get read the index, not the bytes. Like pcommon.Map
// after unmarshalling, it keeps repeated keys, in wire order. Valid until the Decoder's next
// Decode.
type Attributes struct {
	buf []byte
	kvs []kvRec
}

// Len returns the number of attributes, repeated keys included.
func (a Attributes) Len() int { return len(a.kvs) }

// At returns the i-th attribute's key (in the request, not a copy) and value.
func (a Attributes) At(i int) (key []byte, v Value) {
	kv := &a.kvs[i]
	return a.buf[kv.key.off : kv.key.off+kv.key.n : kv.key.off+kv.key.n], Value{buf: a.buf, typ: kv.typ, num: kv.num}
}

// Get returns the value of the first attribute whose key is key, as pcommon.Map.Get does.
// It allocates nothing.
func (a Attributes) Get(key string) (Value, bool) {
	for i := range a.kvs {
		kv := &a.kvs[i]
		if int(kv.key.n) == len(key) && string(a.buf[kv.key.off:kv.key.off+kv.key.n]) == key {
			return Value{buf: a.buf, typ: kv.typ, num: kv.num}, true
		}
	}
	return Value{}, false
}

// Index returns the position of the first attribute whose key is key (At reads it), or -1.
// It allocates nothing.
func (a Attributes) Index(key string) int {
	for i := range a.kvs {
		kv := &a.kvs[i]
		if int(kv.key.n) == len(key) && string(a.buf[kv.key.off:kv.key.off+kv.key.n]) == key {
			return i
		}
	}
	return -1
}

// GetBytes is Get for a key held as bytes.
func (a Attributes) GetBytes(key []byte) (Value, bool) {
	for i := range a.kvs {
		kv := &a.kvs[i]
		if int(kv.key.n) == len(key) && string(a.buf[kv.key.off:kv.key.off+kv.key.n]) == string(key) {
			return Value{buf: a.buf, typ: kv.typ, num: kv.num}, true
		}
	}
	return Value{}, false
}
