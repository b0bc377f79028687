package reduce

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview"
	"github.com/otelcol-red/otelcol-red/internal/wiretraces/traceview/traceviewtest"
)

// A rule anchored at the start is skipped, without running its expression, for names without
// its literal prefix; the rules' answers are those of the expressions alone.
func TestAnchoredPrefix(t *testing.T) {
	for expr, want := range map[string]string{
		`^tenant-[0-9a-z]+ (.*)$`: "tenant-",
		`^GET /orders/\d+$`:       "GET /orders/",
		`tenant-x`:                "", // not anchored: matches anywhere
		`(?m)^GET /x`:             "", // ^ at any line start
		`(?i)^get /x`:             "", // case folded: no literal prefix
		`^(GET|POST) /x`:          "",
		`^`:                       "",
	} {
		re := regexp.MustCompile(expr)
		require.Equal(t, want, anchoredPrefix(re), expr)
		for _, name := range []string{"tenant-a1 GET /x", "GET /orders/12", "x tenant-x", "a\nGET /x", "get /x", "POST /x", ""} {
			r := Rule{re: re, prefix: anchoredPrefix(re)}
			skipped := !strings.HasPrefix(name, r.prefix)
			if skipped {
				require.False(t, re.MatchString(name), "%s skipped %q, which it matches", expr, name)
			}
		}
	}
}

// The last-name memo (lastName) answers a repeated span as the full path would: same names,
// same counters, same names offered to clustering's learner. Two scratches of one namer see
// the same spans in runs of repeats; the second forgets its memo before every span.
func TestRepeatedSpanNamesAnswerAsTheFullPath(t *testing.T) {
	rules := [][3]string{
		{"", `^tenant-[0-9a-z]+ (.*)$`, "$1"},
		{"b", `^GET /cart/\d+$`, "GET /cart/{id}"},
		// For the names from_semantic_conventions gives: it rewrites the rules' buffer.
		{"", `^GET /r/(.*)$`, "GET /route/$1"},
	}
	names := []string{"GET /orders/12", "GET /orders/13", "tenant-7 GET /x/5", "GET /cart/9", "op",
		"GET /users/wa", "GET /users/wb", "GET /users/wc", "GET /users/wd", "job 5f2a9c1e77"}
	for _, c := range []struct {
		name string
		cfg  nameConfig
	}{
		{"clustering", nameConfig{clustering: true}},
		{"every layer", nameConfig{semconv: true, rules: rules, clustering: true}},
		{"dry run", nameConfig{semconv: true, rules: rules, clustering: true, dryRun: true}},
		{"rules", nameConfig{semconv: true, rules: rules}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := namerOf(t, c.cfg)
			sm, sf := nameScratch{cluster: new(clustering.Scratch)}, nameScratch{cluster: new(clustering.Scratch)}
			rnd := rand.New(rand.NewPCG(5, 5^0x5eed))
			now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
			if len(c.cfg.rules) > 0 && c.cfg.semconv {
				// A span the rules rename, one from_semantic_conventions names (the rules
				// rewrite the buffer the first's name is in: too long for the rule cache, it
				// is built there), the first again.
				long := "GET /" + strings.Repeat("x", nameCacheMaxLen)
				a, b := ptrace.NewSpan(), ptrace.NewSpan()
				a.SetName("tenant-7 " + long)
				b.SetName("b")
				b.SetKind(ptrace.SpanKindServer)
				b.Attributes().PutStr("http.request.method", "GET")
				b.Attributes().PutStr("http.route", "/r/{id}")
				require.Equal(t, long, nameOf(n, &sm, "a", viewOf(t, a)))
				require.Equal(t, "GET /route/{id}", nameOf(n, &sm, "a", viewOf(t, b)))
				require.Equal(t, long, nameOf(n, &sm, "a", viewOf(t, a)))
				n.publish(&sm)
			}
			hits := 0
			for i := range 4000 {
				span := ptrace.NewSpan()
				span.SetName(names[rnd.IntN(len(names))])
				span.SetKind(ptrace.SpanKindServer)
				if rnd.IntN(2) == 0 {
					span.SetKind(ptrace.SpanKindClient)
				}
				switch rnd.IntN(4) {
				case 0: // named by the semantic conventions (a server span)
					span.Attributes().PutStr("http.request.method", "GET")
					span.Attributes().PutStr("http.route", "/r/{id}")
				case 1: // a route only: never clustered
					span.Attributes().PutStr("http.route", "/r/{id}")
				}
				svc := string(rune('a' + rnd.IntN(3)))
				for range 1 + rnd.IntN(4) {
					hit := sm.last.valid && sm.last.name == span.Name() && sm.last.svc == svc
					got := strings.Clone(nameOf(n, &sm, svc, viewOf(t, span)))
					sf.last.valid = false
					want := nameOf(n, &sf, svc, viewOf(t, span))
					require.Equal(t, want, got, "span %d", i)
					require.Equal(t, sf.renamed, sm.renamed, "span %d", i)
					require.Equal(t, sf.dryRun, sm.dryRun, "span %d", i)
					require.Equal(t, sf.cluster.Pending(), sm.cluster.Pending(), "span %d", i)
					if hit && sm.last.valid {
						hits++
					}
				}
				if rnd.IntN(8) == 0 { // the end of a request, and the aggregator after it
					require.Equal(t, sf.renamed, sm.renamed)
					n.publish(&sm)
					sf = nameScratch{cluster: sf.cluster}
					require.False(t, sm.last.valid)
					if rnd.IntN(2) == 0 {
						// Both offered the same names: learning them twice changes nothing.
						now += int64(time.Second)
						learn(n, sm.cluster, now)
						learn(n, sf.cluster, now)
					}
				}
			}
			require.Greater(t, hits, 1000, "the memo answered")
			if n.clusters != nil {
				require.Positive(t, n.clusters.Templates())
			}
		})
	}
}

// TestSemconvMayApplyIsConservative checks the key-only pre-check against the pass over the
// values: wherever it lets appendSemconvName return at once, the values would not have
// renamed the span nor found an http.route. Spans get random subsets of the keys, with
// random value types (empty and non-empty strings, booleans, integers) and kinds.
func TestSemconvMayApplyIsConservative(t *testing.T) {
	keys := []string{attrHTTPRequestMethod, attrHTTPMethodOld, attrHTTPRoute, attrURLTemplate,
		attrRPCService, attrRPCMethod, attrDBQuerySummary, attrDBOperationName,
		attrDBCollectionName, attrDBStoredProcedureName, attrMessagingOperationName,
		attrMessagingDestTemplate, attrMessagingDestName, attrMessagingDestTemporary,
		attrMessagingDestAnonymous, "other.attribute"}
	kinds := []ptrace.SpanKind{ptrace.SpanKindUnspecified, ptrace.SpanKindServer,
		ptrace.SpanKindClient, ptrace.SpanKindProducer, ptrace.SpanKindConsumer, ptrace.SpanKindInternal}
	r := rand.New(rand.NewPCG(1, 2))
	skipped, renamed := 0, 0
	for range 20000 {
		span := ptrace.NewSpan()
		span.SetKind(kinds[r.IntN(len(kinds))])
		for _, k := range keys {
			switch r.IntN(16) { // each key in one span of four
			case 0:
				span.Attributes().PutStr(k, "x")
			case 1:
				span.Attributes().PutStr(k, "")
			case 2:
				span.Attributes().PutBool(k, r.IntN(2) == 0)
			case 3:
				span.Attributes().PutInt(k, 1)
			}
		}
		v := viewOf(t, span)
		full, fullRenamed, fullRoute := appendSemconvNameFromValues(nil, v.Attributes(), v.Kind())
		got, gotRenamed, gotRoute := appendSemconvName(nil, v)
		require.Equal(t, string(full), string(got))
		require.Equal(t, fullRenamed, gotRenamed)
		require.Equal(t, fullRoute, gotRoute)
		if !semconvMayApply(v.Attributes(), v.Kind()) {
			skipped++
		}
		if fullRenamed {
			renamed++
		}
	}
	// Both branches ran often enough to mean something.
	t.Logf("skipped %d, renamed %d", skipped, renamed)
	require.Greater(t, skipped, 1000)
	require.Greater(t, renamed, 1000)
}

// viewOf reads sp as the reducer reads a pdata span.
func viewOf(t testing.TB, sp ptrace.Span) *traceview.Span[traceview.Pdata] {
	return traceviewtest.Span[traceview.Pdata](t, sp)
}

// namerOf is the namer of span_name configuration cfg.
func namerOf(t *testing.T, cfg nameConfig) *Namer {
	var rules []Rule
	for _, r := range cfg.rules {
		rule, err := CompileRule(r[0], r[1], r[2])
		require.NoError(t, err)
		rules = append(rules, rule)
	}
	var clusters *clustering.Clusterer
	if cfg.clustering {
		clusters = clustering.New(clustering.Config{MaxChildren: 3, MaxTemplatesPerService: 5})
	}
	return NewNamer(cfg.semconv, rules, clusters, cfg.dryRun)
}

// nameConfig is span_name's configuration as the tests write it: rules as service, match,
// replace; clustering with at most 3 children and 5 templates per service.
type nameConfig struct {
	semconv, clustering, dryRun bool
	rules                       [][3]string
}

// learn hands the names of s to n's learner and publishes the templates, as the aggregator
// does after applying a batch and a round.
func learn(n *Namer, s *clustering.Scratch, now int64) {
	if n.clusters != nil {
		n.clusters.Learn(s, now)
		n.clusters.Publish()
	}
}
