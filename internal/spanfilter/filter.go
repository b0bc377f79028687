package spanfilter // import "github.com/otelcol-red/otelcol-red/internal/spanfilter"

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
)

// Filter is compiled filter_policies (Compile). A nil *Filter keeps every span; callers test
// for nil first, so that a configuration without policies costs a pointer comparison per span.
type Filter struct {
	include, includeAny, exclude []policy
}

// policy is one include, include_any or exclude: every condition must hold.
type policy struct {
	intrinsics []intrinsicCond
	resource   []attrCond
	span       []attrCond
}

// Keep reports whether the span under the cursor, of the resource whose attributes are res, is
// counted: Tempo's ApplyFilterPolicy. Excludes first, then an include_any that matches keeps
// the span, then every include must match; with include_any but no include, a span no
// include_any matched is dropped.
func Keep[S traceview.Source](f *Filter, res traceview.Attrs[S], span *traceview.Span[S]) bool {
	for i := range f.exclude {
		if matchPolicy(&f.exclude[i], res, span) {
			return false
		}
	}
	for i := range f.includeAny {
		if matchPolicy(&f.includeAny[i], res, span) {
			return true
		}
	}
	if len(f.include) == 0 {
		return len(f.includeAny) == 0
	}
	for i := range f.include {
		if !matchPolicy(&f.include[i], res, span) {
			return false
		}
	}
	return true
}

// matchPolicy checks the span's intrinsics first (fields already read), then the attributes
// (a look-up each).
func matchPolicy[S traceview.Source](p *policy, res traceview.Attrs[S], span *traceview.Span[S]) bool {
	for i := range p.intrinsics {
		if !p.intrinsics[i].matches(span.Kind(), span.StatusCode(), span.Name()) {
			return false
		}
	}
	for i := range p.resource {
		if !matchAttr(&p.resource[i], res) {
			return false
		}
	}
	if len(p.span) > 0 {
		attrs := span.Attributes()
		for i := range p.span {
			if !matchAttr(&p.span[i], attrs) {
				return false
			}
		}
	}
	return true
}

// attrCond compares one attribute. As in Tempo, the first attribute with the key decides,
// and one of another type compares as that type's zero value: a strict "" matches an int
// attribute, a regex is matched against "" for a value that is not a string.
type attrCond struct {
	key  string
	typ  pcommon.ValueType // strict: the type of want; regex: ValueTypeEmpty
	want traceview.Val
	re   *regexp.Regexp
}

func newAttrCond(key string, v any, regex bool) (attrCond, error) {
	c := attrCond{key: key}
	if regex {
		re, err := compileRegex(v)
		c.re = re
		return c, err
	}
	switch v := v.(type) {
	case string:
		c.typ, c.want = pcommon.ValueTypeStr, traceview.StrVal(v)
	case int:
		c.typ, c.want = pcommon.ValueTypeInt, traceview.IntVal(int64(v))
	case int64:
		c.typ, c.want = pcommon.ValueTypeInt, traceview.IntVal(v)
	case float64:
		c.typ, c.want = pcommon.ValueTypeDouble, traceview.DoubleVal(v)
	case bool:
		c.typ, c.want = pcommon.ValueTypeBool, traceview.BoolVal(v)
	case nil:
		return c, errors.New("missing: a strict condition needs a string, an int, a double or a bool")
	default:
		return c, fmt.Errorf("%v (%T): a strict condition compares a string, an int, a double or a bool", v, v)
	}
	return c, nil
}

func matchAttr[S traceview.Source](c *attrCond, attrs traceview.Attrs[S]) bool {
	// nil: bytes, maps and slices are read as their type alone, which is all a comparison
	// with a scalar needs.
	v, ok := attrs.GetVal(c.key, nil)
	if !ok {
		return false
	}
	if c.re != nil {
		return c.re.MatchString(v.Str())
	}
	switch c.typ {
	case pcommon.ValueTypeStr:
		return v.Str() == c.want.Str()
	case pcommon.ValueTypeInt:
		return v.Int() == c.want.Int()
	case pcommon.ValueTypeDouble:
		return v.Double() == c.want.Double()
	default:
		return v.Bool() == c.want.Bool()
	}
}

// The names of span kinds and status codes as OTLP's protobuf enums spell them, which Tempo's
// strict values and regular expressions are written against.
var (
	kindNames   = [...]string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}
	statusNames = [...]string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"}
)

// intrinsicCond compares the span's kind, status or name. For a kind or a status, which of
// the enum's values match is worked out once, when the filter is compiled (known); a regex is
// run per span only for values outside the enum, which protobuf spells as their number.
type intrinsicCond struct {
	target target
	known  uint8 // kinds or status codes that match, a bit each
	name   string
	re     *regexp.Regexp
}

func newIntrinsicCond(t target, v any, regex bool) (intrinsicCond, error) {
	c := intrinsicCond{target: t}
	names := kindNames[:]
	if t == targetStatus {
		names = statusNames[:]
	}
	if regex {
		re, err := compileRegex(v)
		if err != nil {
			return c, err
		}
		if t == targetName {
			c.re = re
			return c, nil
		}
		for i, n := range names {
			if re.MatchString(n) {
				c.known |= 1 << i
			}
		}
		c.re = re
		return c, nil
	}
	s, ok := v.(string)
	if !ok {
		return c, fmt.Errorf("%v (%T): a strict kind, status or name is a string", v, v)
	}
	if t == targetName {
		c.name = s
		return c, nil
	}
	for i, n := range names {
		if n == s {
			c.known = 1 << i
			return c, nil
		}
	}
	return c, fmt.Errorf("%q is not one of %q", s, names)
}

func (c *intrinsicCond) matches(kind ptrace.SpanKind, status ptrace.StatusCode, name string) bool {
	var v, n int
	switch c.target {
	case targetName:
		if c.re != nil {
			return c.re.MatchString(name)
		}
		return name == c.name
	case targetKind:
		v, n = int(kind), len(kindNames)
	default:
		v, n = int(status), len(statusNames)
	}
	if v >= 0 && v < n {
		return c.known&(1<<v) != 0
	}
	// Outside the enum: strict values name enum values only; a regex sees the number, as
	// protobuf's String spells it (strconv.Itoa allocates nothing below 100).
	return c.re != nil && c.re.MatchString(strconv.Itoa(v))
}
