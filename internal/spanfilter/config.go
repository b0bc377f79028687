// Package spanfilter decides which spans the trace connectors count, with the configuration and
// the semantics of Grafana Tempo's metrics-generator `filter_policies` (its pkg/spanfilter):
// policies that include or exclude spans by resource and span attributes and by the span's
// kind, status and name, matched exactly (strict) or by regular expression (regex). A Filter is
// compiled once from the configuration and then only read, by every producer at once; Keep is
// written once over traceview and compiled for pdata and for the wire, and allocates nothing.
package spanfilter // import "github.com/otelcol-red/otelcol-red/internal/spanfilter"

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Policy is one entry of filter_policies: at least one of Include, IncludeAny and Exclude.
// A span is kept when it matches no Exclude of any policy, and then when it matches an
// IncludeAny of some policy, or else every Include of every policy (Tempo's order). Without
// policies every span is kept.
type Policy struct {
	// Include keeps only the spans that match it (all policies' includes must match).
	Include *Match `mapstructure:"include"`
	// IncludeAny keeps the spans that match it whatever the includes say; with IncludeAny and
	// no Include anywhere, only the spans that match some IncludeAny are kept.
	IncludeAny *Match `mapstructure:"include_any"`
	// Exclude drops the spans that match it, before any include is looked at.
	Exclude *Match `mapstructure:"exclude"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// Match matches a span when every one of its attributes does.
type Match struct {
	// MatchType is "strict" (values compared exactly, by type) or "regex" (RE2 regular
	// expressions matched anywhere in the string value, unless anchored). Required.
	MatchType string `mapstructure:"match_type"`
	// Attributes are the conditions, all of which must hold.
	Attributes []Attribute `mapstructure:"attributes"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// Attribute is one condition: Key names what is compared, as a TraceQL identifier does:
// `resource.<attribute>` or `span.<attribute>` (the attribute name may be double-quoted), or
// the intrinsics `kind`, `status` and `name` (also spelled `span:kind`, `span:status`,
// `span:name`). Value is a string, an int, a double or a bool for strict matching of
// attributes (an attribute of another type never equals it); a kind is SPAN_KIND_SERVER ...,
// a status STATUS_CODE_OK ...; for regex, an RE2 expression.
type Attribute struct {
	Key   string `mapstructure:"key"`
	Value any    `mapstructure:"value"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// The match types.
const (
	Strict = "strict"
	Regex  = "regex"
)

// Validate checks the policies as Compile would and names the key at fault, prefixed by key
// (the list's YAML key, "filter_policies").
func Validate(key string, policies []Policy) error {
	_, err := Compile(key, policies)
	return err
}

// Compile returns the filter of the policies; nil (keep everything) when there are none.
// Errors name the key at fault, prefixed by key.
func Compile(key string, policies []Policy) (*Filter, error) {
	if len(policies) == 0 {
		return nil, nil
	}
	f := &Filter{}
	var errs []error
	for i, p := range policies {
		at := fmt.Sprintf("%s[%d]", key, i)
		if p.Include == nil && p.IncludeAny == nil && p.Exclude == nil {
			errs = append(errs, fmt.Errorf("%s: a policy needs at least one of include, include_any and exclude", at))
			continue
		}
		for _, m := range []struct {
			name  string
			match *Match
			dst   *[]policy
		}{
			{"include", p.Include, &f.include},
			{"include_any", p.IncludeAny, &f.includeAny},
			{"exclude", p.Exclude, &f.exclude},
		} {
			if m.match == nil {
				continue
			}
			cp, err := compileMatch(at+"."+m.name, m.match)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			*m.dst = append(*m.dst, cp)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return f, nil
}

func compileMatch(at string, m *Match) (policy, error) {
	var p policy
	regex := false
	switch m.MatchType {
	case Strict:
	case Regex:
		regex = true
	default:
		return p, fmt.Errorf("%s.match_type: %q, use %q or %q", at, m.MatchType, Strict, Regex)
	}
	var errs []error
	for j, a := range m.Attributes {
		attrAt := fmt.Sprintf("%s.attributes[%d]", at, j)
		target, name, err := parseKey(a.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.key: %w", attrAt, err))
			continue
		}
		if target == targetResource || target == targetSpan {
			c, err := newAttrCond(name, a.Value, regex)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.value: %w", attrAt, err))
				continue
			}
			if target == targetResource {
				p.resource = append(p.resource, c)
			} else {
				p.span = append(p.span, c)
			}
			continue
		}
		c, err := newIntrinsicCond(target, a.Value, regex)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.value: %w", attrAt, err))
			continue
		}
		p.intrinsics = append(p.intrinsics, c)
	}
	return p, errors.Join(errs...)
}

// target is what a condition reads.
type target uint8

const (
	targetResource target = iota
	targetSpan
	targetKind
	targetStatus
	targetName
)

// parseKey reads a key as TraceQL spells an attribute or an intrinsic; Tempo's filters accept
// these (an unscoped `.attr` is refused there too: it would need a span-then-resource look-up).
func parseKey(key string) (target, string, error) {
	switch key {
	case "kind", "span:kind":
		return targetKind, "", nil
	case "status", "span:status":
		return targetStatus, "", nil
	case "name", "span:name":
		return targetName, "", nil
	case "":
		return 0, "", errors.New("empty, use resource.<attribute>, span.<attribute>, kind, status or name")
	}
	for _, s := range []struct {
		prefix string
		t      target
	}{{"resource.", targetResource}, {"span.", targetSpan}} {
		if name, ok := strings.CutPrefix(key, s.prefix); ok {
			if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
				name = name[1 : len(name)-1]
			}
			if name == "" {
				return 0, "", fmt.Errorf("%q names no attribute", key)
			}
			return s.t, name, nil
		}
	}
	return 0, "", fmt.Errorf("%q: use resource.<attribute>, span.<attribute>, or the intrinsics kind, status and name", key)
}

// compileRegex compiles a regex condition's value, which must be a string.
func compileRegex(v any) (*regexp.Regexp, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%v (%T): a regex is a string", v, v)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	return re, nil
}
