package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import (
	"errors"
	"fmt"
	"hash/maphash"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
)

// SpanNameConfig rewrites the span name the metrics are keyed by (the span.name attribute), so
// that instrumentation that put a raw URL path or an ID in the span name does not make a series
// per request. All three layers are off by default: the metrics then carry span names exactly
// as spanmetrics does.
type SpanNameConfig struct {
	// FromSemanticConventions names spans as the OpenTelemetry semantic conventions do when
	// the span carries the low-cardinality attributes they name spans after (see README.md,
	// "Span names"); other spans keep their name. Default false.
	FromSemanticConventions bool `mapstructure:"from_semantic_conventions"`
	// Rules rename spans by regular expression, after from_semantic_conventions; the first
	// rule that applies to the span's service and matches its name wins. Default: none.
	Rules []SpanNameRule `mapstructure:"rules"`
	// Clustering learns templates for the names neither layer renamed (clustering.go).
	// Default: off.
	Clustering ClusteringConfig `mapstructure:"clustering"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// SpanNameRule replaces a span name that Match matches (anywhere in the name, unless
// anchored) with Replace, expanded as regexp.Regexp.Expand does: $1 or ${1} is the first
// capture group, ${name} a named one, $$ a dollar sign. The whole name is replaced, not just the
// matched part.
type SpanNameRule struct {
	// Service restricts the rule to spans of this service.name (exact); empty means all.
	Service string `mapstructure:"service"`
	// Match is an RE2 regular expression (Go regexp syntax).
	Match string `mapstructure:"match"`
	// Replace is the new span name.
	Replace string `mapstructure:"replace"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// validate compiles the rules; every error names the key and the rule index.
func (c *SpanNameConfig) validate() error {
	var errs []error
	for i, r := range c.Rules {
		if _, err := compileNameRule(r); err != nil {
			errs = append(errs, fmt.Errorf("span_name.rules[%d].%w", i, err))
		}
	}
	if err := c.Clustering.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// compileNameRule compiles r; its error starts with the rule's key (match or replace).
func compileNameRule(r SpanNameRule) (nameRule, error) {
	if r.Match == "" {
		return nameRule{}, errors.New("match: empty; every rule needs a regular expression")
	}
	re, err := regexp.Compile(r.Match)
	if err != nil {
		return nameRule{}, fmt.Errorf("match: %w", err)
	}
	if err := checkTemplate(re, r.Replace); err != nil {
		return nameRule{}, fmt.Errorf("replace: %w", err)
	}
	return nameRule{service: r.Service, re: re, replace: r.Replace, prefix: anchoredPrefix(re)}, nil
}

// anchoredPrefix returns the literal text every name a rule can match starts with: the
// expression's literal prefix when it is anchored at the start (^, without (?m)), else "". A
// name without it is passed over without running the expression, which keeps rules cheap for
// the many names they are not about (one comparison instead of a regexp call), also when the
// rule cache cannot hold every name.
func anchoredPrefix(re *regexp.Regexp) string {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return ""
	}
	parsed = parsed.Simplify()
	first := parsed
	if parsed.Op == syntax.OpConcat && len(parsed.Sub) > 0 {
		first = parsed.Sub[0]
	}
	if first.Op != syntax.OpBeginText {
		return ""
	}
	prefix, _ := re.LiteralPrefix()
	return prefix
}

// checkTemplate rejects references to groups re does not have. Expand silently writes
// nothing for them, and "$1x" means the group named "1x", not group 1 then "x": both would
// quietly turn every matched span into one wrong name.
func checkTemplate(re *regexp.Regexp, tmpl string) error {
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] != '$' {
			continue
		}
		if i+1 < len(tmpl) && tmpl[i+1] == '$' {
			i++
			continue
		}
		name, end := "", i+1
		if end < len(tmpl) && tmpl[end] == '{' {
			close := end + 1
			for close < len(tmpl) && tmpl[close] != '}' {
				close++
			}
			if close == len(tmpl) {
				return fmt.Errorf("%q: unterminated ${", tmpl)
			}
			name, end = tmpl[end+1:close], close+1
		} else {
			for end < len(tmpl) && isNameByte(tmpl[end]) {
				end++
			}
			name = tmpl[i+1 : end]
		}
		if name == "" {
			return fmt.Errorf("%q: a lone $ (write $$ for a dollar sign)", tmpl)
		}
		if n, err := strconv.Atoi(name); err == nil {
			if n > re.NumSubexp() {
				return fmt.Errorf("%q: $%s refers to group %d, the expression has %d", tmpl, name, n, re.NumSubexp())
			}
		} else if re.SubexpIndex(name) < 0 {
			return fmt.Errorf("%q: $%s refers to no group (write ${1}x for group 1 followed by x)", tmpl, name)
		}
		i = end - 1
	}
	return nil
}

func isNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

type nameRule struct {
	service string // "" for every service
	re      *regexp.Regexp
	replace string
	prefix  string // what a name must start with to match (anchoredPrefix); "" when unknown
}

// Layers of renaming, as counted in renamed_spans.
const (
	renamedBySemconv = iota
	renamedByRule
	renamedByClustering
	renameLayers
)

var renameLayerNames = [renameLayers]string{"semantic_conventions", "rule", "clustering"}

// spanNamer gives a span the name its series are keyed by. It is shared by every producer: the
// configuration is immutable, and the rule cache and the counters are atomics, so producers
// never take a lock for it nor share one with the aggregator. Clustering's templates are
// read the same way, from snapshots the aggregator publishes (clustering.go).
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
type spanNamer struct {
	semconv bool
	rules   []nameRule
	anyAll  bool // a rule applies to every service
	seed    maphash.Seed
	cache   []atomic.Pointer[nameEntry] // nameCacheSlots; nil without rules
	renamed [renameLayers]atomic.Int64  // spans renamed, by layer (telemetry)

	clusters   *clustering.Clusterer // nil without span_name.clustering (clustering.go)
	dryRun     bool                  // clustering only counts
	dryRenamed atomic.Int64          // spans clustering would have renamed (dry run)
}

// nameCacheSlots bounds the rule cache; names longer than nameCacheMaxLen are not cached (the
// rules run for them every time), so the cache holds at most ~5 MiB. A name may sit in any of
// the nameCacheWays slots of its set: with one slot per name, two of a handful of hot names
// would share a slot often enough (2-3% for 15 names) to evict each other at every span, and
// with 4 ways a few sets of 1000 hot names overflowed (BenchmarkSpanNames: 6-24 allocations per
// 1000 spans); with 8 ways and ~1 name per slot, overflowing a set takes 9 names hashed alike.
// When a set is full, a new entry replaces the slot its hash picks.
const (
	nameCacheSlots  = 8192
	nameCacheWays   = 8
	nameCacheMaxLen = 256
	nameCacheAdmit  = 8
)

// nameEntry is the rules' verdict on one (service, name): key is service, 0, name; out the
// new name, when matched.
type nameEntry struct {
	key     string
	svcLen  int
	out     string
	matched bool
}

// newSpanNamer returns nil when nothing renames spans: the reducer then reads span names as
// they are, with one nil check per span.
func newSpanNamer(c SpanNameConfig) *spanNamer {
	if !c.FromSemanticConventions && len(c.Rules) == 0 && !c.Clustering.Enabled {
		return nil
	}
	n := &spanNamer{semconv: c.FromSemanticConventions, seed: maphash.MakeSeed(),
		clusters: c.Clustering.clusterer(), dryRun: c.Clustering.DryRun}
	for _, r := range c.Rules {
		nr, err := compileNameRule(r)
		if err != nil {
			panic("BUG: tracemetrics: span_name.rules not validated: " + err.Error())
		}
		n.rules = append(n.rules, nr)
		n.anyAll = n.anyAll || r.Service == ""
	}
	if len(n.rules) > 0 {
		n.cache = make([]atomic.Pointer[nameEntry], nameCacheSlots)
	}
	return n
}

// nameScratch is a batch's room for renaming: the names built for the span being reduced, and
// the spans renamed since the counters were last published.
type nameScratch struct {
	semconv, rule []byte
	renamed       [renameLayers]int64
	dryRun        int64
	misses        uint64             // names that found their cache set full (nameCacheAdmit)
	cluster       clustering.Scratch // the template built, and the names for the learner
	last          lastName
}

// lastName is the previous span's name and what the rules and clustering made of it, for
// the next span with the same service, name and http.route presence: a request usually holds
// one operation's spans in a row (as a server and a client, ok and failed, a burst of one
// endpoint), and each of them after the first costs a comparison instead of the rule
// prefixes, clustering's scan of the name and its look-up.
// It lives for one reduce call (publish clears it): svc and name point into the request, and
// out into s.rule or s.cluster, which only a call that replaces it rewrites. A repeat does
// not stamp its clustering template again: the first span of the run did, in the same call.
type lastName struct {
	valid                bool
	route                bool // the span has an http.route (clustering leaves it alone)
	svc, name            string
	out                  string
	kept                 bool // out is name
	rule, clustered, dry bool // the counters the first span added to
}

// name returns the name span's series are keyed by. The result may point into s and is valid
// until the next call with s: the caller copies it into the key.
func (n *spanNamer) name(s *nameScratch, svc string, span ptrace.Span) string {
	name := span.Name()
	// route: the span has an http.route, whose name clustering leaves to the layers above;
	// from_semantic_conventions reads it in the same pass as its own attributes.
	route, routeRead := false, false
	if n.semconv {
		var renamed bool
		if s.semconv, renamed, route = appendSemconvName(s.semconv[:0], span); renamed {
			s.renamed[renamedBySemconv]++
			s.last.valid = false // the rules may rewrite s.rule, which s.last.out may be in
			name = bytesString(s.semconv)
			if out, ok := n.rename(s, svc, name); ok {
				return out
			}
			return name
		}
		routeRead = true
	}
	if n.clusters != nil && !routeRead {
		route = hasRoute(span)
	}
	if l := &s.last; l.valid && l.route == route && l.name == name && l.svc == svc {
		l.count(s)
		if l.kept {
			return name
		}
		return l.out
	}
	rule, clustered, dry := s.renamed[renamedByRule], s.renamed[renamedByClustering], s.dryRun
	out := name
	if r, ok := n.rename(s, svc, name); ok {
		out = r
	} else if n.clusters != nil && !route {
		out = n.cluster(s, svc, name)
	}
	s.last = lastName{valid: true, route: route, svc: svc, name: name, out: out, kept: out == name,
		rule:      s.renamed[renamedByRule] != rule,
		clustered: s.renamed[renamedByClustering] != clustered,
		dry:       s.dryRun != dry}
	return out
}

// count adds to s's counters what the span l describes added.
func (l *lastName) count(s *nameScratch) {
	if l.rule {
		s.renamed[renamedByRule]++
	}
	if l.clustered {
		s.renamed[renamedByClustering]++
	}
	if l.dry {
		s.dryRun++
	}
}

// rename applies the rules to name, counting a rename.
func (n *spanNamer) rename(s *nameScratch, svc, name string) (string, bool) {
	if n.rules == nil || !n.appliesTo(svc) {
		return "", false
	}
	out, ok := n.ruleName(s, svc, name)
	if ok {
		s.renamed[renamedByRule]++
	}
	return out, ok
}

// publish adds the spans s renamed to the counters, once per request, and forgets the last
// name (lastName: it points into the request).
func (n *spanNamer) publish(s *nameScratch) {
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

func (n *spanNamer) appliesTo(svc string) bool {
	if n.anyAll {
		return true
	}
	for i := range n.rules {
		if n.rules[i].service == svc {
			return true
		}
	}
	return false
}

// ruleName applies the first rule for svc that matches name, through the cache. A name that no
// rule can match by its service and literal prefix never reaches the cache: that comparison is
// cheaper than a lookup, and such names (most of them, for rules about a few) would only push
// the names the rules rewrite out of it.
func (n *spanNamer) ruleName(s *nameScratch, svc, name string) (string, bool) {
	if !n.mayMatch(svc, name) {
		return "", false
	}
	if len(name) > nameCacheMaxLen {
		return n.applyRules(s, svc, name)
	}
	h := maphash.String(n.seed, name) ^ maphash.String(n.seed, svc)*0x9e3779b97f4a7c15
	set := n.cache[(h&(nameCacheSlots/nameCacheWays-1))*nameCacheWays:][:nameCacheWays]
	victim, full := &set[(h>>56)%nameCacheWays], true
	for i := range set {
		e := set[i].Load()
		if e == nil {
			victim, full = &set[i], false
			break
		}
		if e.svcLen == len(svc) && e.key[:e.svcLen] == svc && e.key[e.svcLen+1:] == name {
			return e.out, e.matched
		}
	}
	out, ok := n.applyRules(s, svc, name)
	// A full set takes one new name in nameCacheAdmit: while names never repeat (the case the
	// rules are for), evicting for each would allocate an entry per span for nothing, and a
	// name that does repeat gets in after a few tries.
	if full {
		s.misses++
		if s.misses%nameCacheAdmit != 0 {
			return out, ok
		}
	}
	// One string holds the key and the new name: one allocation for both.
	all := svc + "\x00" + name + out
	keyLen := len(svc) + 1 + len(name)
	e := &nameEntry{key: all[:keyLen], svcLen: len(svc), out: all[keyLen:], matched: ok}
	victim.Store(e)
	return e.out, ok
}

// mayMatch reports whether a rule for svc could match name: one applies to svc and name starts
// with its literal prefix (always, for a rule not anchored at the start).
func (n *spanNamer) mayMatch(svc, name string) bool {
	for i := range n.rules {
		r := &n.rules[i]
		if (r.service == "" || r.service == svc) && strings.HasPrefix(name, r.prefix) {
			return true
		}
	}
	return false
}

// applyRules runs the rules; a new name is built in s.rule.
func (n *spanNamer) applyRules(s *nameScratch, svc, name string) (string, bool) {
	for i := range n.rules {
		r := &n.rules[i]
		if r.service != "" && r.service != svc || !strings.HasPrefix(name, r.prefix) {
			continue
		}
		// No allocation when there is no match; the indices of a match are allocated.
		m := r.re.FindStringSubmatchIndex(name)
		if m == nil {
			continue
		}
		s.rule = r.re.ExpandString(s.rule[:0], r.replace, name, m)
		return bytesString(s.rule), true
	}
	return "", false
}

// bytesString views b as a string without copying; b must not change while the string is used.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Attributes the semantic conventions name spans after: the stable ones, and the HTTP ones of
// v1.20 and before (http.method), which many instrumentations still emit.
const (
	attrHTTPRequestMethod      = "http.request.method"
	attrHTTPMethodOld          = "http.method"
	attrHTTPRoute              = "http.route"
	attrURLTemplate            = "url.template"
	attrRPCService             = "rpc.service"
	attrRPCMethod              = "rpc.method"
	attrDBQuerySummary         = "db.query.summary"
	attrDBOperationName        = "db.operation.name"
	attrDBCollectionName       = "db.collection.name"
	attrDBStoredProcedureName  = "db.stored_procedure.name"
	attrMessagingOperationName = "messaging.operation.name"
	attrMessagingDestTemplate  = "messaging.destination.template"
	attrMessagingDestName      = "messaging.destination.name"
	attrMessagingDestTemporary = "messaging.destination.temporary"
	attrMessagingDestAnonymous = "messaging.destination.anonymous"
)

// semconvAttrs are the attributes of one span that a semantic-conventions name is built from.
type semconvAttrs struct {
	method, oldMethod, route, urlTemplate     string
	rpcService, rpcMethod                     string
	dbSummary, dbOperation, dbCollection      string
	dbProcedure                               string
	msgOperation, msgTemplate, msgDestination string
	msgUnnamed                                bool // destination temporary or anonymous
}

// appendSemconvName appends the span's name as the semantic conventions define it, and
// reports whether the span has the attributes for one (renamed), and whether it has a
// non-empty string http.route, whatever its name (route, as hasRoute). Only string
// attributes count. In order:
//
//   - HTTP server span (kind SERVER) with http.route: "{method} {http.route}";
//     HTTP client span (kind CLIENT) with url.template: "{method} {url.template}"; {method} is
//     http.request.method (else http.method), "HTTP" when it is "_OTHER". Without a route or
//     template the name is kept: the conventions' fallback, "{method}" alone, would throw
//     away the name of well-instrumented spans that carry their route only in the name.
//   - rpc.service and rpc.method: "{rpc.service}/{rpc.method}".
//   - db.query.summary: itself; else db.operation.name with db.collection.name (or
//     db.stored_procedure.name): "{db.operation.name} {target}".
//   - messaging.operation.name with messaging.destination.template, or with
//     messaging.destination.name unless the destination is temporary or anonymous:
//     "{messaging.operation.name} {destination}".
//
// The attribute values are used as they are (a route is never rewritten further here).
func appendSemconvName(dst []byte, span ptrace.Span) (out []byte, renamed, route bool) {
	if !semconvMayApply(span) {
		return dst, false, false
	}
	return appendSemconvNameFromValues(dst, span)
}

// appendSemconvNameFromValues is appendSemconvName after semconvMayApply: the pass over the
// values that decides.
func appendSemconvNameFromValues(dst []byte, span ptrace.Span) (out []byte, renamed, route bool) {
	var a semconvAttrs
	for k, v := range span.Attributes().All() {
		if v.Type() == pcommon.ValueTypeBool {
			if (k == attrMessagingDestTemporary || k == attrMessagingDestAnonymous) && v.Bool() {
				a.msgUnnamed = true
			}
			continue
		}
		if v.Type() != pcommon.ValueTypeStr {
			continue
		}
		switch k {
		case attrHTTPRequestMethod:
			a.method = v.Str()
		case attrHTTPMethodOld:
			a.oldMethod = v.Str()
		case attrHTTPRoute:
			a.route = v.Str()
		case attrURLTemplate:
			a.urlTemplate = v.Str()
		case attrRPCService:
			a.rpcService = v.Str()
		case attrRPCMethod:
			a.rpcMethod = v.Str()
		case attrDBQuerySummary:
			a.dbSummary = v.Str()
		case attrDBOperationName:
			a.dbOperation = v.Str()
		case attrDBCollectionName:
			a.dbCollection = v.Str()
		case attrDBStoredProcedureName:
			a.dbProcedure = v.Str()
		case attrMessagingOperationName:
			a.msgOperation = v.Str()
		case attrMessagingDestTemplate:
			a.msgTemplate = v.Str()
		case attrMessagingDestName:
			a.msgDestination = v.Str()
		}
	}
	method := a.method
	if method == "" {
		method = a.oldMethod
	}
	if method != "" {
		var target string
		switch span.Kind() {
		case ptrace.SpanKindServer:
			target = a.route
		case ptrace.SpanKindClient:
			target = a.urlTemplate
		}
		if target != "" {
			if method == "_OTHER" {
				method = "HTTP"
			}
			return append(append(append(dst, method...), ' '), target...), true, a.route != ""
		}
	}
	if a.rpcService != "" && a.rpcMethod != "" {
		return append(append(append(dst, a.rpcService...), '/'), a.rpcMethod...), true, a.route != ""
	}
	if a.dbSummary != "" {
		return append(dst, a.dbSummary...), true, a.route != ""
	}
	if a.dbOperation != "" {
		target := a.dbCollection
		if target == "" {
			target = a.dbProcedure
		}
		if target != "" {
			return append(append(append(dst, a.dbOperation...), ' '), target...), true, a.route != ""
		}
	}
	if a.msgOperation != "" {
		dest := a.msgTemplate
		if dest == "" && !a.msgUnnamed {
			dest = a.msgDestination
		}
		if dest != "" {
			return append(append(append(dst, a.msgOperation...), ' '), dest...), true, a.route != ""
		}
	}
	return dst, false, a.route != ""
}

// Which of the attributes appendSemconvName reads a span has, by key alone (semconvMayApply).
const (
	keyMethod = 1 << iota // http.request.method or http.method
	keyURLTemplate
	keyRPCService
	keyRPCMethod
	keyDBSummary
	keyDBOperation
	keyDBTarget // db.collection.name or db.stored_procedure.name
	keyMsgOperation
	keyMsgDestination // messaging.destination.template or .name
)

// semconvMayApply reports whether span has the keys for a semantic-conventions name or an
// http.route, whatever their values; when it does not, appendSemconvName can only keep the
// name, and returns at once. The pass reads keys only: most spans carry few of these keys
// (a method without a route, say) and for them it replaces reading each attribute's value,
// the 200-byte record of values and the decision (BenchmarkLayers/series=100k/reduce/semconv).
// A true answer is only a maybe: the values decide, as before.
func semconvMayApply(span ptrace.Span) bool {
	var has uint16
	for k := range span.Attributes().All() {
		switch k {
		case attrHTTPRequestMethod, attrHTTPMethodOld:
			has |= keyMethod
		case attrHTTPRoute:
			return true // the caller needs it, renamed or not
		case attrURLTemplate:
			has |= keyURLTemplate
		case attrRPCService:
			has |= keyRPCService
		case attrRPCMethod:
			has |= keyRPCMethod
		case attrDBQuerySummary:
			has |= keyDBSummary
		case attrDBOperationName:
			has |= keyDBOperation
		case attrDBCollectionName, attrDBStoredProcedureName:
			has |= keyDBTarget
		case attrMessagingOperationName:
			has |= keyMsgOperation
		case attrMessagingDestTemplate, attrMessagingDestName:
			has |= keyMsgDestination
		}
	}
	all := func(bits uint16) bool { return has&bits == bits }
	return all(keyMethod|keyURLTemplate) && span.Kind() == ptrace.SpanKindClient ||
		all(keyRPCService|keyRPCMethod) ||
		all(keyDBSummary) ||
		all(keyDBOperation|keyDBTarget) ||
		all(keyMsgOperation|keyMsgDestination)
}
