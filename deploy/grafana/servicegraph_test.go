package grafana

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rowPanels returns the panels under the top-level row titled title: the panels after it up to
// the next row (rows of this dashboard are expanded, so their panels follow them).
func rowPanels(t *testing.T, d dashboard, title string) []panel {
	t.Helper()
	for i, p := range d.Panels {
		if p.Type != "row" || p.Title != title {
			continue
		}
		var out []panel
		for _, q := range d.Panels[i+1:] {
			if q.Type == "row" {
				break
			}
			out = append(out, q)
		}
		return out
	}
	t.Fatalf("no row %q", title)
	return nil
}

func panelOfType(t *testing.T, ps []panel, typ string) panel {
	t.Helper()
	var found []panel
	for _, p := range ps {
		if p.Type == typ {
			found = append(found, p)
		}
	}
	require.Len(t, found, 1, "one %s panel", typ)
	return found[0]
}

// byClause matches the grouping of a PromQL aggregation, `sum by (a, b)`.
var byClause = regexp.MustCompile(`\bby \(([^)]*)\)`)

// TestServiceGraphRow checks the service graph row against what Grafana needs to draw it: the
// table's three queries are instant tables grouped alike (the merge transformation joins their
// rows on the label columns), summed over instances, with every value column renamed and every
// override naming a renamed column; the node graph's query is the frame Grafana's node graph
// takes as edges (refId edges) and the transformation names its value mainstat.
// TestServiceGraphQueriesOnPromtool (integration) evaluates the queries on Prometheus.
func TestServiceGraphRow(t *testing.T) {
	ps := rowPanels(t, load(t), "Service graph")

	table := panelOfType(t, ps, "table")
	require.Len(t, table.Targets, 3, "%q: requests/s, failed share, p95 server latency", table.Title)
	for _, tg := range table.Targets {
		assert.Equal(t, "table", tg.Format, "%q %s", table.Title, tg.RefID)
		assert.True(t, tg.Instant, "%q %s is an instant query", table.Title, tg.RefID)
		assert.Contains(t, tg.Expr, `client=~"$service"`, "%q %s filters by the services", table.Title, tg.RefID)
		groups := byClause.FindAllStringSubmatch(tg.Expr, -1)
		require.NotEmpty(t, groups, "%q %s aggregates", table.Title, tg.RefID)
		for _, g := range groups {
			labels := strings.TrimSuffix(g[1], ", le")
			assert.Equal(t, "client, server, connection_type", labels, "%q %s: one row per edge, summed over instances", table.Title, tg.RefID)
		}
	}
	assert.Contains(t, table.Targets[0].Expr, "traces_service_graph_request_total")
	assert.Contains(t, table.Targets[1].Expr, "traces_service_graph_request_failed_total")
	assert.Contains(t, table.Targets[2].Expr, "histogram_quantile(0.95,")
	assert.Contains(t, table.Targets[2].Expr, "traces_service_graph_request_server_seconds_bucket")

	require.Len(t, table.Transformations, 2)
	assert.Equal(t, "merge", table.Transformations[0].ID, "one row per edge from the three queries")
	organize := table.Transformations[1]
	require.Equal(t, "organize", organize.ID)
	renamed, ok := organize.Options["renameByName"].(map[string]any)
	require.True(t, ok, "organize renames the columns")
	names := map[string]bool{}
	for _, tg := range table.Targets {
		// Grafana names the value column of each of several table queries "Value #<refId>".
		to, ok := renamed["Value #"+tg.RefID].(string)
		if assert.True(t, ok, "%q: the value of %s is renamed", table.Title, tg.RefID) {
			names[to] = true
		}
	}
	for _, l := range []string{"client", "server", "connection_type"} {
		if to, ok := renamed[l].(string); ok {
			names[to] = true
		}
	}
	require.NotEmpty(t, table.FieldConfig.Overrides)
	for _, o := range table.FieldConfig.Overrides {
		assert.Equal(t, "byName", o.Matcher.ID)
		// Overrides apply after the transformations: they must name the renamed columns.
		assert.True(t, names[o.Matcher.Options], "%q: override of %q, which is no column", table.Title, o.Matcher.Options)
	}

	graph := panelOfType(t, ps, "nodeGraph")
	require.Len(t, graph.Targets, 1, "%q: the edges; Grafana draws the nodes from them", graph.Title)
	edges := graph.Targets[0]
	// The node graph takes a frame as its edges by its refId or a field named source; the query's
	// labels id, source and target become those fields (table format).
	assert.Equal(t, "edges", edges.RefID)
	assert.Equal(t, "table", edges.Format)
	assert.True(t, edges.Instant)
	assert.Contains(t, edges.Expr, `client=~"$service"`)
	assert.Contains(t, edges.Expr, "sum by (id, source, target)")
	require.Len(t, graph.Transformations, 1)
	calc := graph.Transformations[0]
	assert.Equal(t, "calculateField", calc.ID, "the value column becomes mainstat")
	assert.Equal(t, "mainstat", calc.Options["alias"])
	assert.Equal(t, "reduceRow", calc.Options["mode"])
	// A time-series calculation would first join the frames on time; the edges are a table.
	assert.Equal(t, false, calc.Options["timeSeries"])
}
