package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

import (
	"slices"
	"unsafe"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Glob dimensions (`dimensions: [{glob: "k8s.*.name"}]`) label a series with every attribute
// whose key a pattern of its family matches (family.globs): the span's, then, for the events
// family, the event's, then the resource's; a key found in several places takes the value of
// the first, as named dimensions do. spanmetrics v0.165.1 visits the span's matches in key
// order and then the others in key order, and keys the series by that sequence; here a
// series is keyed by its matches sorted by key, so two spans with the same attributes are one
// series wherever each attribute came from (spanmetrics makes two series with the same
// attributes when a key moves between span and resource).
//
// The matches go into the series key after the named dimensions: their count, then each key
// and value identity, and, like the named dimensions' types, their value types after the
// identity, then the count again in 4 bytes at the very end, so the identity is found without
// decoding the key (internal/series).

// globScratch is a producer's working memory for glob dimensions, kept in its batch: the
// matches of the resource being reduced, those of the span being keyed, and the keys whose
// answers the family did not know yet (published with learn once the request is reduced).
// Which keys a family takes is known to all producers (family.globs, dimglob.Answers); a key
// is matched against the patterns only until its answer is published.
//
// The spans of a request mostly come from a few instrumentations, each writing the same keys
// in the same order, so the keys of the previous span and their answers are kept by position
// (memo): a key equal to the one at its position last time costs a string comparison instead
// of a map lookup (BenchmarkGlobDimensions, README.md).
type globScratch struct {
	memo  [series.MaxFamilies][]keyAnswer        // per family: the keys of the last span, by position
	res   [series.MaxFamilies][]series.GlobMatch // per family: the current resource's matches
	cur   []series.GlobMatch
	learn [series.MaxFamilies][]string // per family: keys to publish, each once
}

// keyAnswer is an attribute key and whether a family's globs take it.
type keyAnswer struct {
	key   string
	taken bool
}

// maxLearn bounds the new keys one request publishes per family: keys made of IDs would
// otherwise make learn, and its linear check for repeats, as long as the request.
const maxLearn = 64

// taken reports whether family f takes key k, listing k for learn when f did not know.
func (g *globScratch) taken(f *series.Family, k string) bool {
	taken, known := f.Globs.Lookup(k)
	if !known {
		l := g.learn[f.Index]
		if len(l) < maxLearn && !slices.Contains(l, k) {
			g.learn[f.Index] = append(l, k)
		}
	}
	return taken
}

// setResourceGlobs finds the matches of resAttrs for every family with globs: once per
// ResourceSpans, not per span. Bytes, maps and slices are encoded into *enc.
func setResourceGlobs[S traceview.Source](g *globScratch, fams []*series.Family, resAttrs traceview.Attrs[S], enc *[]byte) {
	for _, f := range fams {
		if f.Globs == nil {
			continue
		}
		m := g.res[f.Index][:0]
		for k, v := range resAttrs.All() {
			if g.taken(f, k) {
				m = appendMatch(m, k, v, enc)
			}
		}
		g.res[f.Index] = m
	}
}

// collectGlobs returns the matches of family f for a span (and, in the events family, one of
// its events), sorted by key, each key once with its value from the span, else the event, else
// the resource (setResourceGlobs); within one map the first of a repeated key, as Map.Get
// finds it. The slice is valid until the next call.
func collectGlobs[S traceview.Source](g *globScratch, f *series.Family, spanAttrs traceview.Attrs[S], evAttrs *traceview.Attrs[S], enc *[]byte) []series.GlobMatch {
	m := g.cur[:0]
	memo, i := g.memo[f.Index], 0
	for k, v := range spanAttrs.All() {
		var taken bool
		switch {
		case i < len(memo) && memo[i].key == k:
			taken = memo[i].taken
		case i < len(memo):
			taken = g.taken(f, k)
			memo[i] = keyAnswer{k, taken}
		default:
			taken = g.taken(f, k)
			memo = append(memo, keyAnswer{k, taken})
		}
		i++
		if taken {
			m = appendMatch(m, k, v, enc)
		}
	}
	g.memo[f.Index] = memo
	if evAttrs != nil {
		for k, v := range evAttrs.All() {
			if g.taken(f, k) {
				m = appendMatch(m, k, v, enc)
			}
		}
	}
	m = append(m, g.res[f.Index]...)
	// Stable insertion sort: a few matches, and the first of equal keys must stay first.
	for i := 1; i < len(m); i++ {
		for j := i; j > 0 && m[j].Key < m[j-1].Key; j-- {
			m[j], m[j-1] = m[j-1], m[j]
		}
	}
	out := m[:0]
	for i := range m {
		if len(out) > 0 && out[len(out)-1].Key == m[i].Key {
			continue
		}
		out = append(out, m[i])
	}
	g.cur = m
	return out
}

// appendMatch appends the match of key k and value v, written into its slot field by field
// (lookupDims says why).
func appendMatch[S traceview.Source](m []series.GlobMatch, k string, v traceview.Value[S], enc *[]byte) []series.GlobMatch {
	m = append(m, series.GlobMatch{Key: k})
	m[len(m)-1].Value = v.Val(enc)
	return m
}

// release publishes the answers learnt (copying their keys) and drops the request's
// attributes (keys and values point into its memory), so that a pooled batch does not keep it
// alive.
func (g *globScratch) release(fams []*series.Family) {
	for _, f := range fams {
		if l := g.learn[f.Index]; len(l) > 0 {
			f.Globs.Learn(l)
			clear(l)
			g.learn[f.Index] = l[:0]
		}
	}
	clear(g.cur[:cap(g.cur)])
	for i := range g.res {
		clear(g.res[i][:cap(g.res[i])])
		clear(g.memo[i])
		g.memo[i] = g.memo[i][:0]
	}
}

// footprint is the scratch's heap in bytes.
func (g *globScratch) footprint() int64 {
	n, memo, learn := int64(cap(g.cur)), int64(0), int64(0)
	for i := range g.res {
		n += int64(cap(g.res[i]))
		memo += int64(cap(g.memo[i]))
		learn += int64(cap(g.learn[i]))
	}
	return n*int64(unsafe.Sizeof(series.GlobMatch{})) + memo*int64(unsafe.Sizeof(keyAnswer{})) + learn*int64(unsafe.Sizeof(""))
}
