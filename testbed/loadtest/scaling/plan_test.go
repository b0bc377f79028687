package scaling

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

func TestDefaultScalingProcs(t *testing.T) {
	tests := []struct {
		cpus int
		want []int
	}{
		{cpus: 1, want: []int{1}},
		{cpus: 2, want: []int{1}},
		{cpus: 3, want: []int{1, 2}},
		{cpus: 8, want: []int{1, 2, 4}},
		{cpus: 9, want: []int{1, 2, 4, 8}},
		{cpus: 64, want: []int{1, 2, 4, 8}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, DefaultScalingProcs(tt.cpus), "%d CPUs", tt.cpus)
	}
}

func TestScalingPlan(t *testing.T) {
	plan := Plan(PlanConfig{Procs: []int{2, 1}, FlushInterval: 15 * time.Second, Phase: 20 * time.Second, Concurrency: 4})
	require.Len(t, plan, 2)
	for i, n := range []int{2, 1} {
		p := plan[i]
		assert.Equal(t, Kind, p.Kind)
		assert.Equal(t, []string{"floor", "ours", "stock"}, p.Sides)
		assert.Equal(t, []harness.Shape{harness.Shape1k, harness.Shape100k}, p.Shapes)
		assert.Equal(t, n, p.Pinned(), "pinned to as many CPUs as its GOMAXPROCS")
		assert.Equal(t, 4*n, p.Concurrency)
		assert.Equal(t, 1, p.Rounds)
		assert.Equal(t, 20*time.Second, p.Window)
		assert.Equal(t, 20*time.Second, p.Warmup)
	}
	assert.Equal(t, "scaling-gomaxprocs-2", plan[0].Name)
	assert.Contains(t, Title(plan[0]), "alone on 2 CPUs")
	assert.Contains(t, Title(plan[1]), "alone on one CPU")

	plan = Plan(PlanConfig{Procs: []int{4}, With1M: true, Rounds: 3})
	assert.Equal(t, []harness.Shape{harness.Shape1k, harness.Shape100k, harness.Shape1M}, plan[0].Shapes)
	assert.Equal(t, 3, plan[0].Rounds)
	assert.Equal(t, 4, plan[0].Concurrency, "one request in flight per CPU at least")

	plan = Plan(PlanConfig{Procs: []int{8}, Shapes: []harness.Shape{harness.Shape1k}})
	assert.Equal(t, []harness.Shape{harness.Shape1k}, plan[0].Shapes)
	plan = Plan(PlanConfig{Procs: []int{8}, Shapes: []harness.Shape{harness.Shape1M, harness.Shape1k}, With1M: true})
	assert.Equal(t, []harness.Shape{harness.Shape1M, harness.Shape1k}, plan[0].Shapes, "the million-series shape once")
}

func TestParseShapes(t *testing.T) {
	got, err := ParseShapes("1k, 100K,1m")
	require.NoError(t, err)
	assert.Equal(t, []harness.Shape{harness.Shape1k, harness.Shape100k, harness.Shape1M}, got)
	got, err = ParseShapes("100k")
	require.NoError(t, err)
	assert.Equal(t, []harness.Shape{harness.Shape100k}, got)
	for _, bad := range []string{"", "10k", "1k,1k", "1k,"} {
		_, err := ParseShapes(bad)
		assert.Error(t, err, bad)
	}
}
