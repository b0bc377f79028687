package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"encoding/binary"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// recordGroup is what one record key collects from a request: one Traces per
// sub-key (one for a normal key, fanout for a hot one).
type recordGroup struct {
	key   string
	subs  []ptrace.Traces // nil entries hold nothing yet
	spans []int           // spans per sub-key
}

// grouping splits a request by record key. Every ResourceSpans goes to
// exactly one group; a hot key's ResourceSpans is split by trace ID, so each
// span goes to exactly one sub-key and a trace never spans two.
type grouping struct {
	keyer *keyer
	hot   *hotKeys
	// traceBuckets, when not 0, is key_by: trace_id: every span goes to
	// sub-key traceID mod traceBuckets of one key, traceIDKey.
	traceBuckets int
	// followLinks is follow_links under key_by: trace_id: a CONSUMER span with
	// span links goes to the bucket of each trace it links to.
	followLinks bool
	index       map[string]int
	groups      []recordGroup
	// counts for telemetry
	fallbackSpans int
	cutKeys       int
}

// traceIDKey is the one record key of key_by: trace_id. Sub-key i goes i
// partitions after this key's own, so trace_id_buckets sub-keys cover that
// many partitions, each once.
const traceIDKey = "trace_id"

func newGrouping(cfg *Config, h *hotKeys) *grouping {
	g := &grouping{keyer: newKeyer(cfg), hot: h, index: map[string]int{}}
	if cfg.KeyBy == keyByTraceID {
		g.traceBuckets = cfg.TraceIDBuckets
		g.followLinks = cfg.FollowLinks
	}
	return g
}

func (g *grouping) reset() {
	clear(g.index)
	clear(g.groups)
	g.groups = g.groups[:0]
	g.fallbackSpans, g.cutKeys = 0, 0
}

func (g *grouping) add(td ptrace.Traces) {
	rss := td.ResourceSpans()
	if g.traceBuckets > 0 {
		grp := g.group([]byte(traceIDKey), g.traceBuckets)
		for i := 0; i < rss.Len(); i++ {
			g.splitByTrace(grp, rss.At(i))
		}
		return
	}
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		n := spanCount(rs)
		key, outcome := g.keyer.key(rs.Resource())
		switch outcome {
		case keyFallback:
			g.fallbackSpans += n
		case keyCut:
			g.cutKeys++
		}
		grp := g.group(key, g.hot.observe(key, n))
		// The width is fixed when the key is first seen in the request, so a
		// tick in the middle of a request never moves a trace.
		if len(grp.subs) == 1 {
			t := grp.sub(0)
			rs.CopyTo(t.ResourceSpans().AppendEmpty())
			grp.spans[0] += n
			continue
		}
		g.splitByTrace(grp, rs)
	}
}

// group returns the request's group of key, made with fanout sub-keys when
// the key is first seen in the request.
func (g *grouping) group(key []byte, fanout int) *recordGroup {
	gi, ok := g.index[string(key)]
	if !ok {
		gi = len(g.groups)
		s := string(key)
		g.groups = append(g.groups, recordGroup{key: s, subs: make([]ptrace.Traces, fanout), spans: make([]int, fanout)})
		g.index[s] = gi
	}
	return &g.groups[gi]
}

func (grp *recordGroup) sub(i int) ptrace.Traces {
	if grp.subs[i] == (ptrace.Traces{}) {
		grp.subs[i] = ptrace.NewTraces()
	}
	return grp.subs[i]
}

// splitByTrace copies each span of rs into the sub-key its trace ID picks,
// under a copy of its resource and scope. Under key_by: trace_id with
// follow_links, a CONSUMER span with links goes instead to the sub-key of
// each trace it links to, each copy with the links to that sub-key only: a
// service graph gateway pairs a consumer with the producers it links to
// (connector/tracegraph, links), so the consumer must reach the gateway that
// reads each producer's trace, and count each link there once.
func (g *grouping) splitByTrace(grp *recordGroup, rs ptrace.ResourceSpans) {
	fanout := len(grp.subs)
	var dstRS [maxFanout]ptrace.ResourceSpans
	var haveRS [maxFanout]bool
	sss := rs.ScopeSpans()
	for si := 0; si < sss.Len(); si++ {
		ss := sss.At(si)
		var dstSS [maxFanout]ptrace.ScopeSpans
		var haveSS [maxFanout]bool
		to := func(k int) ptrace.SpanSlice {
			if !haveRS[k] {
				dstRS[k] = grp.sub(k).ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(dstRS[k].Resource())
				dstRS[k].SetSchemaUrl(rs.SchemaUrl())
				haveRS[k] = true
			}
			if !haveSS[k] {
				dstSS[k] = dstRS[k].ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(dstSS[k].Scope())
				dstSS[k].SetSchemaUrl(ss.SchemaUrl())
				haveSS[k] = true
			}
			grp.spans[k]++
			return dstSS[k].Spans()
		}
		spans := ss.Spans()
		for i := 0; i < spans.Len(); i++ {
			span := spans.At(i)
			if g.followLinks && span.Kind() == ptrace.SpanKindConsumer && span.Links().Len() > 0 && splitByLinks(span, fanout, to) {
				continue
			}
			span.CopyTo(to(subKey(span.TraceID(), fanout)).AppendEmpty())
		}
	}
}

// splitByLinks copies a CONSUMER span into the sub-key of each trace it
// links to, keeping in each copy the links to that sub-key, and reports
// whether it did. Links without a span ID point at nothing tracegraph pairs
// with (it skips them too): they are ignored, and a span with no other goes
// by its own trace ID, its links untouched.
func splitByLinks(span ptrace.Span, fanout int, to func(int) ptrace.SpanSlice) bool {
	var seen [maxFanout / 64]uint64
	links := span.Links()
	copied := false
	for i := 0; i < links.Len(); i++ {
		if links.At(i).SpanID().IsEmpty() {
			continue
		}
		k := subKey(links.At(i).TraceID(), fanout)
		if seen[k/64]&(1<<(k%64)) != 0 {
			continue
		}
		seen[k/64] |= 1 << (k % 64)
		c := to(k).AppendEmpty()
		span.CopyTo(c)
		c.Links().RemoveIf(func(l ptrace.SpanLink) bool { return l.SpanID().IsEmpty() || subKey(l.TraceID(), fanout) != k })
		copied = true
	}
	return copied
}

// subKey picks a hot key's sub-key from the trace ID, so all spans of a trace
// go to one partition whichever agent sends them. Trace IDs are random, so
// their low bytes spread evenly.
func subKey(id pcommon.TraceID, fanout int) int {
	return int(binary.BigEndian.Uint64(id[8:]) % uint64(fanout))
}

func spanCount(rs ptrace.ResourceSpans) int {
	n := 0
	sss := rs.ScopeSpans()
	for i := 0; i < sss.Len(); i++ {
		n += sss.At(i).Spans().Len()
	}
	return n
}
