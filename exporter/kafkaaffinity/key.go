package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

const (
	// keySeparator joins the values of several partition_by attributes.
	keySeparator = '|'
	// minKeyBytes leaves room for a prefix besides the '#' and 16 hex digits
	// of a cut key.
	minKeyBytes = 32
)

// keyOutcome says how a key was built, for the exporter's own telemetry.
type keyOutcome uint8

const (
	keyFromAttributes keyOutcome = iota
	keyFallback
	keyCut
)

// keyer builds record keys from resources into a reused buffer, so keying a
// resource allocates nothing; the map lookups that follow convert the buffer
// without copying it.
type keyer struct {
	attrs    []string
	fallback string
	maxBytes int
	buf      []byte
}

func newKeyer(cfg *Config) *keyer {
	return &keyer{
		attrs:    cfg.PartitionBy,
		fallback: cfg.FallbackKey,
		maxBytes: cfg.MaxKeyBytes,
		buf:      make([]byte, 0, cfg.MaxKeyBytes),
	}
}

// key returns the record key of a resource; the slice is valid until the
// next call.
func (k *keyer) key(res pcommon.Resource) ([]byte, keyOutcome) {
	k.buf = k.buf[:0]
	attrs := res.Attributes()
	for i, name := range k.attrs {
		v, ok := attrs.Get(name)
		if !ok {
			k.buf = append(k.buf[:0], k.fallback...)
			return k.buf, keyFallback
		}
		if i > 0 {
			k.buf = append(k.buf, keySeparator)
		}
		k.buf = appendValue(k.buf, v)
	}
	if len(k.buf) <= k.maxBytes {
		return k.buf, keyFromAttributes
	}
	// Cut the key but keep distinct long keys distinct: the hash covers the
	// whole key.
	sum := fnv64a(k.buf)
	k.buf = k.buf[:k.maxBytes-17]
	k.buf = append(k.buf, '#')
	k.buf = appendHex16(k.buf, sum)
	return k.buf, keyCut
}

func appendValue(b []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return append(b, v.Str()...)
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case pcommon.ValueTypeBool:
		return strconv.AppendBool(b, v.Bool())
	case pcommon.ValueTypeDouble:
		return strconv.AppendFloat(b, v.Double(), 'g', -1, 64)
	default:
		// Maps, slices and bytes are rare as identifying attributes; their
		// string form is stable, which is all a key needs.
		return append(b, v.AsString()...)
	}
}

func appendHex16(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[(v>>uint(shift))&0xf])
	}
	return b
}

// fnv64a is FNV-1a inline: hash/fnv would put its state on the heap.
func fnv64a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}
