package reduce // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/reduce"

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
)

// CompileRule compiles the rule that replaces the names of service's spans (every
// service's when "") that match with replace; its error starts with the rule's key (match or
// replace).
func CompileRule(service, match, replace string) (Rule, error) {
	if match == "" {
		return Rule{}, errors.New("match: empty; every rule needs a regular expression")
	}
	re, err := regexp.Compile(match)
	if err != nil {
		return Rule{}, fmt.Errorf("match: %w", err)
	}
	if err := checkTemplate(re, replace); err != nil {
		return Rule{}, fmt.Errorf("replace: %w", err)
	}
	return Rule{service: service, re: re, replace: replace, prefix: anchoredPrefix(re)}, nil
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

// Rule is a span_name rule, compiled (CompileRule).
type Rule struct {
	service string // "" for every service
	re      *regexp.Regexp
	replace string
	prefix  string // what a name must start with to match (anchoredPrefix); "" when unknown
}

// ruleSet is span_name.rules, compiled, and the cache of their verdicts. It is shared by every
// producer: the rules are immutable and the cache is made of immutable entries behind atomic
// pointers (spanNamer has the costs).
type ruleSet struct {
	rules  []Rule
	anyAll bool // a rule applies to every service
	seed   maphash.Seed
	cache  []atomic.Pointer[nameEntry] // nameCacheSlots
}

// ruleScratch is a producer's room for the rules: the name they build, and how many names
// found their cache set full (nameCacheAdmit).
type ruleScratch struct {
	out    []byte
	misses uint64
}

// newRuleSet returns the rules with an empty cache; nil without rules.
func newRuleSet(rules []Rule) *ruleSet {
	if len(rules) == 0 {
		return nil
	}
	rs := &ruleSet{rules: rules, seed: maphash.MakeSeed(), cache: make([]atomic.Pointer[nameEntry], nameCacheSlots)}
	for _, r := range rules {
		rs.anyAll = rs.anyAll || r.service == ""
	}
	return rs
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

// appliesTo reports whether a rule applies to the spans of service svc.
func (rs *ruleSet) appliesTo(svc string) bool {
	if rs.anyAll {
		return true
	}
	for i := range rs.rules {
		if rs.rules[i].service == svc {
			return true
		}
	}
	return false
}

// ruleName applies the first rule for svc that matches name, through the cache. A name that no
// rule can match by its service and literal prefix never reaches the cache: that comparison is
// cheaper than a lookup, and such names (most of them, for rules about a few) would only push
// the names the rules rewrite out of it.
func (rs *ruleSet) ruleName(s *ruleScratch, svc, name string) (string, bool) {
	if !rs.mayMatch(svc, name) {
		return "", false
	}
	if len(name) > nameCacheMaxLen {
		return rs.applyRules(s, svc, name)
	}
	h := maphash.String(rs.seed, name) ^ maphash.String(rs.seed, svc)*0x9e3779b97f4a7c15
	set := rs.cache[(h&(nameCacheSlots/nameCacheWays-1))*nameCacheWays:][:nameCacheWays]
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
	out, ok := rs.applyRules(s, svc, name)
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
func (rs *ruleSet) mayMatch(svc, name string) bool {
	for i := range rs.rules {
		r := &rs.rules[i]
		if (r.service == "" || r.service == svc) && strings.HasPrefix(name, r.prefix) {
			return true
		}
	}
	return false
}

// applyRules runs the rules; a new name is built in s.out.
func (rs *ruleSet) applyRules(s *ruleScratch, svc, name string) (string, bool) {
	for i := range rs.rules {
		r := &rs.rules[i]
		if r.service != "" && r.service != svc || !strings.HasPrefix(name, r.prefix) {
			continue
		}
		// No allocation when there is no match; the indices of a match are allocated.
		m := r.re.FindStringSubmatchIndex(name)
		if m == nil {
			continue
		}
		s.out = r.re.ExpandString(s.out[:0], r.replace, name, m)
		return bytesString(s.out), true
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
