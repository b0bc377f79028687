package flush // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/flush"

// stringCache deduplicates the strings the flusher decodes (service and span names, dimension
// values repeat across series and flushes). Looking a []byte up in a map[string]string does
// not allocate; the map is dropped when it grows past its bound, so hostile cardinality only
// costs what it would cost without it.
type stringCache struct {
	m     map[string]string
	limit int
}

// stringCacheLimit is how many distinct strings the flusher's cache keeps before it starts over.
const stringCacheLimit = 1 << 18

func newStringCache(limit int) *stringCache {
	return &stringCache{m: map[string]string{}, limit: limit}
}

// Intern returns b as a string, the one kept for equal bytes when there is one.
func (in *stringCache) Intern(b []byte) string {
	if in == nil {
		return string(b)
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	if len(in.m) >= in.limit || len(b) > 256 {
		if len(b) > 256 {
			return string(b)
		}
		clear(in.m)
	}
	s := string(b)
	in.m[s] = s
	return s
}
