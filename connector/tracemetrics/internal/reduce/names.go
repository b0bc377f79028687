package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

import (
	"sync/atomic"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/telemetry"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Layers of renaming, as counted in renamed_spans.
const (
	RenamedBySemconv = iota
	RenamedByRule
	RenamedByClustering
	RenameLayers
)

var renameLayerNames = [RenameLayers]string{"semantic_conventions", "rule", "clustering"}

// Namer gives a span the name its series are keyed by. It is shared by every producer: the
// configuration is immutable, and the rule cache and the counters are atomics, so producers
// never take a lock for it nor share one with the aggregator. Clustering's templates are
// read the same way, from snapshots the aggregator publishes (internal/clustering).
//
// The semantic conventions layer reads attributes the span already holds and writes the name
// into the batch's scratch buffer: no allocation. Rules run regular expressions, whose
// submatch search allocates its result; their outcome per (service, name) is kept in an 8-way
// set-associative cache of nameCacheSlots immutable entries behind atomic pointers, so a name
// seen before costs a hash, a few loads and string compares, and nothing is allocated. A miss
// (a name not seen lately) allocates the match indices when a rule matches, and the new entry
// (two objects) when it is admitted: at once into a free slot, one miss in nameCacheAdmit
// into a full set, replacing a slot. At most three allocations per span, about one while
// names do not repeat.
type Namer struct {
	semconv bool
	rules   *ruleSet                   // nil without rules
	renamed [RenameLayers]atomic.Int64 // spans renamed, by layer (telemetry)

	clusters   *clustering.Clusterer // nil without span_name.clustering
	dryRun     bool                  // clustering only counts
	dryRenamed atomic.Int64          // spans clustering would have renamed (dry run)
}

// NewNamer returns nil when nothing renames spans: the reducer then reads span names as
// they are, with one nil check per span.
func NewNamer(semconv bool, rules []Rule, clusters *clustering.Clusterer, dryRun bool) *Namer {
	if !semconv && len(rules) == 0 && clusters == nil {
		return nil
	}
	return &Namer{semconv: semconv, rules: newRuleSet(rules), clusters: clusters, dryRun: dryRun}
}

// nameScratch is a batch's room for renaming: the names built for the span being reduced, and
// the spans renamed since the counters were last published.
type nameScratch struct {
	semconv []byte
	rule    ruleScratch
	renamed [RenameLayers]int64
	dryRun  int64
	cluster *clustering.Scratch // in the batch: the template built, and the names for the learner
	last    lastName
}

// lastName is the previous span's name and what the rules and clustering made of it, for
// the next span with the same service, name and http.route presence: a request usually holds
// one operation's spans in a row (as a server and a client, ok and failed, a burst of one
// endpoint), and each of them after the first costs a comparison instead of the rule
// prefixes, clustering's scan of the name and its look-up.
// It lives for one reduce call (publish clears it): svc and name point into the request, and
// out into s.rule.out or s.cluster, which only a call that replaces it rewrites. A repeat does
// not stamp its clustering template again: the first span of the run did, in the same call.
type lastName struct {
	valid                bool
	route                bool // the span has an http.route (clustering leaves it alone)
	svc, name            string
	out                  string
	kept                 bool // out is name
	rule, clustered, dry bool // the counters the first span added to
}

// nameOf returns the name span's series are keyed by. The result may point into s and is
// valid until the next call with s: the caller copies it into the key.
func nameOf[S traceview.Source](n *Namer, s *nameScratch, svc string, span *traceview.Span[S]) string {
	name := span.Name()
	// route: the span has an http.route, whose name clustering leaves to the layers above;
	// from_semantic_conventions reads it in the same pass as its own attributes.
	route, routeRead := false, false
	if n.semconv {
		var renamed bool
		if s.semconv, renamed, route = appendSemconvName(s.semconv[:0], span); renamed {
			s.renamed[RenamedBySemconv]++
			s.last.valid = false // the rules may rewrite s.rule.out, which s.last.out may be in
			name = bytesString(s.semconv)
			if out, ok := n.rename(s, svc, name); ok {
				return out
			}
			return name
		}
		routeRead = true
	}
	if n.clusters != nil && !routeRead {
		route = hasRoute(span.Attributes())
	}
	if l := &s.last; l.valid && l.route == route && l.name == name && l.svc == svc {
		l.count(s)
		if l.kept {
			return name
		}
		return l.out
	}
	rule, clustered, dry := s.renamed[RenamedByRule], s.renamed[RenamedByClustering], s.dryRun
	out := name
	if r, ok := n.rename(s, svc, name); ok {
		out = r
	} else if n.clusters != nil && !route {
		out = n.cluster(s, svc, name)
	}
	s.last = lastName{valid: true, route: route, svc: svc, name: name, out: out, kept: out == name,
		rule:      s.renamed[RenamedByRule] != rule,
		clustered: s.renamed[RenamedByClustering] != clustered,
		dry:       s.dryRun != dry}
	return out
}

// count adds to s's counters what the span l describes added.
func (l *lastName) count(s *nameScratch) {
	if l.rule {
		s.renamed[RenamedByRule]++
	}
	if l.clustered {
		s.renamed[RenamedByClustering]++
	}
	if l.dry {
		s.dryRun++
	}
}

// rename applies the rules to name, counting a rename.
func (n *Namer) rename(s *nameScratch, svc, name string) (string, bool) {
	if n.rules == nil || !n.rules.appliesTo(svc) {
		return "", false
	}
	out, ok := n.rules.ruleName(&s.rule, svc, name)
	if ok {
		s.renamed[RenamedByRule]++
	}
	return out, ok
}

// publish adds the spans s renamed to the counters, once per request, and forgets the last
// name (lastName: it points into the request).
func (n *Namer) publish(s *nameScratch) {
	s.last = lastName{}
	for i, v := range s.renamed {
		if v != 0 {
			n.renamed[i].Add(v)
			s.renamed[i] = 0
		}
	}
	if s.dryRun != 0 {
		n.dryRenamed.Add(s.dryRun)
		s.dryRun = 0
	}
}

// cluster renames a span's name, which no earlier layer renamed and which has no http.route,
// by its learned template (span_name.clustering). Off, dry-run or not, the name is as it was for the metrics; a dry
// run only counts.
func (n *Namer) cluster(s *nameScratch, svc, name string) string {
	out, changed := n.clusters.Template(s.cluster, svc, name)
	switch {
	case !changed:
		return name
	case n.dryRun:
		s.dryRun++
		return name
	}
	s.renamed[RenamedByClustering]++
	return out
}

// Renames is what the telemetry reads of n's counters; nil when nothing Renames.
func (n *Namer) Renames() *telemetry.Renames {
	if n == nil {
		return nil
	}
	r := &telemetry.Renames{}
	for k, on := range [RenameLayers]bool{
		RenamedBySemconv:    n.semconv,
		RenamedByRule:       n.rules != nil,
		RenamedByClustering: n.clusters != nil && !n.dryRun,
	} {
		if on {
			r.Layers = append(r.Layers, telemetry.Layer{Name: renameLayerNames[k], Renamed: n.renamed[k].Load})
		}
	}
	if n.clusters != nil {
		r.Templates = n.clusters.Templates
		if n.dryRun {
			r.DryRenamed = n.dryRenamed.Load
		}
	}
	return r
}

// Clusterer is the clustering layer's learner, for the aggregator to feed; nil when off.
func (n *Namer) Clusterer() *clustering.Clusterer {
	if n == nil {
		return nil
	}
	return n.clusters
}

// Renamed is the spans layer renamed so far (renamedBySemconv, ...).
func (n *Namer) Renamed(layer int) int64 { return n.renamed[layer].Load() }
