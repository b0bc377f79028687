package hotspotfilter // import "github.com/otelcol-red/otelcol-red/connector/hotspotfilter"

import (
	"context"
	"fmt"
	"math"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/contexts/ottlspan"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/ottlfuncs"
)

// rule is a configured Rule made ready for the data path.
type rule struct {
	name         string
	cond         ottl.ConditionSequence[*ottlspan.TransformContext]
	slow         uint64 // nanoseconds; 0 disables the exemption
	keepErrors   bool
	sampleExcess int64
	include      map[string]struct{}
	exclude      map[string]struct{}

	// interval and tolerance drive the per-service GCRA budget: one span per
	// interval, bursts of up to tolerance/interval+1 spans. interval 0 means
	// no budget at all.
	interval  int64
	tolerance int64

	services *serviceTable
}

func newRule(cfg *Rule, maxServices int, unixStart int64, set component.TelemetrySettings) (*rule, error) {
	cond, err := parseCondition(cfg.Condition, set)
	if err != nil {
		return nil, fmt.Errorf("cannot parse condition of rule %q: %w", cfg.Name, err)
	}
	r := &rule{
		name:         cfg.Name,
		cond:         cond,
		slow:         uint64(cfg.SlowThreshold),
		keepErrors:   cfg.KeepErrors,
		sampleExcess: int64(cfg.SampleExcess),
		include:      toSet(cfg.Services.Include),
		exclude:      toSet(cfg.Services.Exclude),
		services:     newServiceTable(maxServices, unixStart),
	}
	if cfg.Budget > 0 {
		// Rounding the interval up keeps the rate at or below the budget.
		r.interval = int64(math.Ceil(float64(time.Second) / cfg.Budget))
		r.tolerance = int64(cfg.burst()-1) * r.interval
	}
	return r, nil
}

// parseCondition builds a condition sequence the way the filter processor
// does for span conditions: the span context, the standard converters plus
// IsRootSpan. Errors while evaluating are logged and read as "no match", so a
// condition that cannot be evaluated never causes a drop.
func parseCondition(condition string, set component.TelemetrySettings) (ottl.ConditionSequence[*ottlspan.TransformContext], error) {
	if set.Logger == nil {
		set.Logger = zap.NewNop()
	}
	funcs := ottlfuncs.StandardConverters[*ottlspan.TransformContext]()
	isRoot := ottlfuncs.NewIsRootSpanFactory()
	funcs[isRoot.Name()] = isRoot
	parser, err := ottlspan.NewParser(funcs, set)
	if err != nil {
		return ottl.ConditionSequence[*ottlspan.TransformContext]{}, err
	}
	conds, err := parser.ParseConditions([]string{condition})
	if err != nil {
		return ottl.ConditionSequence[*ottlspan.TransformContext]{}, err
	}
	return ottlspan.NewConditionSequence(conds, set, ottlspan.WithConditionSequenceErrorMode(ottl.IgnoreError)), nil
}

// admits reports whether the rule applies to spans of service.
func (r *rule) admits(service string) bool {
	if _, ok := r.exclude[service]; ok {
		return false
	}
	if len(r.include) == 0 {
		return true
	}
	_, ok := r.include[service]
	return ok
}

// matches evaluates the rule's condition on one span. The span context comes from pkg/ottl's
// pool (v0.161.0) and goes back as soon as Eval returns: nothing keeps it (an evaluation error
// is logged inside Eval), so the next span reuses it and judging allocates no context
// (TestConditionAllocatesNothingPerSpan). Not deferred: a panic in Eval only costs the pool
// one context, and the hot path saves the defer.
func (r *rule) matches(ctx context.Context, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) bool {
	tCtx := ottlspan.NewTransformContext(rs, ss, span)
	ok, err := r.cond.Eval(ctx, tCtx)
	tCtx.Close()
	return ok && err == nil
}

func toSet(names []string) map[string]struct{} {
	if len(names) == 0 {
		return nil
	}
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}
