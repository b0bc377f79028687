package clustering

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestIsID(t *testing.T) {
	for word, want := range map[string]bool{
		"12345":                                true,
		"0":                                    true,
		"-7":                                   true,
		"3.5":                                  true,
		"10.0.0.1":                             true,
		"1..2":                                 false,
		"1.":                                   false,
		"v1":                                   false,
		"orders":                               false,
		"123e4567-e89b-12d3-a456-426614174000": true,
		"123e4567-e89b-12d3-a456-42661417400g": false,
		"5f2a9c1e":                             true,
		"5f2a9c1":                              false, // shorter than minHexID
		"deadbeefcafe":                         false, // hex letters only: may be a word
		"dGhpcyBpcyBhIHRva2Vu7x9":              true,
		"getUserById2024Handler":               false, // one run of digits
		"order-2024-report-v2-final":           false, // no upper case
		"":                                     false,
	} {
		require.Equal(t, want, isID(word), word)
	}
}

// letters spells i in lower-case letters only: a word no ID heuristic takes.
func letters(i int) string {
	b := []byte{'w'}
	for {
		b = append(b, byte('a'+i%26))
		i /= 26
		if i == 0 {
			return string(b)
		}
	}
}

type harness struct {
	t *testing.T
	c *Clusterer
	s Scratch
}

func newHarness(t *testing.T, c Config) *harness {
	return &harness{t: t, c: New(c)}
}

// send returns the templates of names (service svc), then lets the learner learn and
// publish, as the aggregator does after a batch.
func (h *harness) send(svc string, names ...string) []string {
	h.learn() // the clock producers stamp on templates is the learner's
	out := make([]string, len(names))
	for i, n := range names {
		tmpl, changed := h.c.Template(&h.s, svc, n)
		require.Equal(h.t, tmpl != n, changed, n)
		out[i] = strings.Clone(tmpl) // tmpl points into the scratch
		if len(h.s.learn) == LearnPerBatch {
			h.learn()
		}
	}
	h.learn()
	return out
}

var clock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

func (h *harness) learn() {
	h.c.Learn(&h.s, clock)
	h.c.Publish()
}

func (h *harness) one(svc, name string) string { return h.send(svc, name)[0] }

var defaults = Config{MaxChildren: 50, MaxTemplatesPerService: 500, TemplateExpiration: time.Hour}

func TestIDsBecomePlaceholdersAtOnce(t *testing.T) {
	h := newHarness(t, defaults)
	require.Equal(t, []string{
		"GET /orders/{id}",
		"GET /orders/{id}/items",
		"/users/{id}/data",
		"/users/{id}/settings",
		"get {id}",
		"GET /blobs/{id}?v={id}",
		"SELECT",
		"GET /orders/",
	}, h.send("s",
		"GET /orders/12345",
		"GET /orders/9/items",
		"/users/1/data",
		"/users/1/settings",
		"get 123e4567-e89b-12d3-a456-426614174000",
		"GET /blobs/5f2a9c1e77?v=3",
		"SELECT",
		"GET /orders/",
	))
	_, changed := h.c.Template(&h.s, "s", "GET /orders/12345")
	require.True(t, changed)
	_, changed = h.c.Template(&h.s, "s", "GET /orders/{id}")
	require.False(t, changed, "a template is its own template")
}

// A position keeps up to max_children distinct words; the one more merges it, and every later
// word there is the wildcard.
func TestSiblingsMergeAboveMaxChildren(t *testing.T) {
	const n = 5
	h := newHarness(t, Config{MaxChildren: n, MaxTemplatesPerService: 100})
	var names []string
	for i := range n {
		names = append(names, "GET /users/"+letters(i))
	}
	require.Equal(t, names, h.send("s", names...), "siblings up to max_children stay apart")
	require.Equal(t, names, h.send("s", names...), "and stay apart once learned")
	require.EqualValues(t, n, h.c.Templates())
	// Another service's positions are its own.
	require.Equal(t, "GET /users/"+letters(n), h.one("other", "GET /users/"+letters(n)))

	// The learner learns the one more at the end of the batch: this name keeps its own.
	require.Equal(t, "GET /users/"+letters(n), h.one("s", "GET /users/"+letters(n)))
	require.Equal(t, 1, h.c.l.services["s"].count, "the siblings are one template")
	for i := range 2 * n {
		require.Equal(t, "GET /users/{*}", h.one("s", "GET /users/"+letters(i)))
	}
	require.Equal(t, "GET /users/{*}/orders/{id}", h.one("s", "GET /users/someone/orders/77"))
	require.Equal(t, "GET /users/{*}", h.one("s", "GET /users/12"), "an id at a merged position is the wildcard")
	require.Equal(t, "GET /teams/"+letters(0), h.one("s", "GET /teams/"+letters(0)), "other positions are not merged")
}

// /users/1/data and /users/1/settings: the id goes, the two words below max_children stay.
func TestDistinctWordsBelowAnIDStayApart(t *testing.T) {
	h := newHarness(t, Config{MaxChildren: 3, MaxTemplatesPerService: 100})
	for range 3 {
		require.Equal(t, []string{"/users/{id}/data", "/users/{id}/settings", "/users/{id}/data"},
			h.send("s", "/users/1/data", "/users/2/settings", "/users/3/data"))
	}
	require.EqualValues(t, 2, h.c.Templates())
}

// The first word is the operation: a service with more operations than max_children keeps
// them all.
func TestFirstWordIsNeverMerged(t *testing.T) {
	h := newHarness(t, Config{MaxChildren: 2, MaxTemplatesPerService: 100})
	var names []string
	for i := range 10 {
		names = append(names, letters(i))
	}
	h.send("s", names...)
	require.Equal(t, names, h.send("s", names...))
}

// Merging a position merges what followed its words, recursively, and their templates.
func TestMergeFoldsSubtrees(t *testing.T) {
	h := newHarness(t, Config{MaxChildren: 2, MaxTemplatesPerService: 100})
	h.send("s", "/a/x/b/p", "/a/y/b/q", "/a/y/c")
	require.EqualValues(t, 3, h.c.Templates())
	h.send("s", "/a/z/b/r") // /a gets its third child: merged; /a/{*}/b then has p, q, r
	require.EqualValues(t, 2, h.c.Templates(), "/a/{*}/b/{*} and /a/{*}/c")
	require.Equal(t, []string{"/a/{*}/b/{*}", "/a/{*}/c", "/a/{*}/d"}, h.send("s", "/a/k/b/zz", "/a/k/c", "/a/k/d"))
}

// 100k names that never repeat, at a position that cannot merge (the first word) and at one
// that does: the templates, and the tree behind them, stay within max_templates_per_service.
func TestTemplatesBoundedUnderChurn(t *testing.T) {
	const maxT = 200
	h := newHarness(t, Config{MaxChildren: 50, MaxTemplatesPerService: maxT})
	for i := range 100_000 {
		h.c.Template(&h.s, "first", letters(i)+" /x")
		h.c.Template(&h.s, "merged", "GET /users/"+letters(i))
		h.c.Template(&h.s, fmt.Sprintf("svc-%d", i), "op")
		if len(h.s.learn) >= LearnPerBatch-2 {
			h.learn()
		}
	}
	h.learn()
	l := h.c.l
	require.Equal(t, maxT, l.services["first"].count)
	require.Equal(t, 1, l.services["merged"].count, "GET /users/{*}")
	require.Len(t, l.services, MaxServices)
	for name, sv := range l.services {
		require.LessOrEqual(t, len(sv.order), 2*sv.count+16, name)
		nodes := countNodes(l, sv.root)
		require.LessOrEqual(t, nodes, 1+maxEdges*sv.count, name)
	}
	require.EqualValues(t, l.held, h.c.Templates())
	require.LessOrEqual(t, h.c.Templates(), int64(maxT+1+MaxServices))
	// The slabs and the edges' arena are bounded by what is held, not by what went through:
	// freed nodes and templates are reused, and the arena is rewritten at each publish once
	// its garbage outweighs the live edges.
	checkTree(t, l)
	held, nodes := int(h.c.Templates()), len(l.nodes)-len(l.freeNodes)
	require.LessOrEqual(t, len(l.tmpls), 2*held+16*MaxServices, "template slots")
	require.LessOrEqual(t, len(l.nodes), 2*nodes, "node slots")
	require.LessOrEqual(t, len(l.edges), 2*l.edgesLive+4096, "edge bytes")
}

// The templates of all services are bounded too: a service makes room among its own, and a
// new service gets none while the bound is reached.
func TestTemplatesBoundedAcrossServices(t *testing.T) {
	h := newHarness(t, Config{MaxChildren: 50, MaxTemplatesPerService: 100})
	h.c.l.maxTotal = 150
	for i := range 1000 {
		h.c.Template(&h.s, fmt.Sprintf("svc-%d", i%2), letters(i))
		if len(h.s.learn) == LearnPerBatch {
			h.learn()
		}
	}
	h.learn()
	require.EqualValues(t, 150, h.c.Templates())
	h.send("late", "op")
	require.EqualValues(t, 150, h.c.Templates())
	require.NotContains(t, h.c.l.services, "late")
	require.Equal(t, 150, h.c.l.services["svc-0"].count+h.c.l.services["svc-1"].count)
}

func countNodes(l *learner, n int32) int {
	c := 1
	for ch := l.nodes[n].first; ch != 0; ch = l.nodes[ch].next {
		c += countNodes(l, ch)
	}
	return c
}

// A template still in use survives churn that evicts others (second chance), and one that is
// not seen for template_expiration is forgotten, with its service.
func TestEvictionAndExpiration(t *testing.T) {
	h := newHarness(t, Config{MaxChildren: 1000, MaxTemplatesPerService: 10, TemplateExpiration: time.Minute})
	h.send("s", "hot")
	for i := range 100 {
		clock += int64(time.Second)
		h.send("s", "hot") // stamped by the producer: a known name
		h.send("s", letters(i))
	}
	require.Equal(t, 10, h.c.l.services["s"].count)
	hot := h.c.l.child(h.c.l.services["s"].root, []byte("hot"))
	require.NotZero(t, hot)
	require.NotZero(t, h.c.l.nodes[hot].tmpl, "the hot template survived 100 cold ones")

	h.send("t", "other")
	clock += int64(30 * time.Second)
	h.send("s", "hot")
	clock += int64(45 * time.Second)
	h.c.Expire(clock)
	require.EqualValues(t, 1, h.c.Templates(), "only hot, seen 45s ago, is left")
	require.NotContains(t, h.c.l.services, "t")
	require.NotContains(t, *h.c.services.Load(), "t")
	clock += int64(time.Minute)
	h.c.Expire(clock)
	require.Zero(t, h.c.Templates())
	require.Empty(t, *h.c.services.Load())
}

// Known names cost no allocation: the template is built in the scratch, and found in the
// snapshot.
func TestTemplateOfKnownNamesAllocatesNothing(t *testing.T) {
	h := newHarness(t, Config{MaxChildren: 3, MaxTemplatesPerService: 100})
	names := []string{"GET /orders/12345", "/users/1/data", "GET /users/a", "GET /users/b", "GET /users/c", "GET /users/d", "op"}
	h.send("s", names...)
	h.send("s", names...)
	allocs := testing.AllocsPerRun(100, func() {
		for _, n := range names {
			h.c.Template(&h.s, "s", n)
		}
		h.c.Template(&h.s, "s", "GET /users/new-one") // merged: known as GET /users/{*}
	})
	require.Zero(t, allocs)
	require.Empty(t, h.s.learn)
}

// Producers read while the learner writes (go test -race).
func TestProducersAndLearnerConcurrently(t *testing.T) {
	c := New(Config{MaxChildren: 4, MaxTemplatesPerService: 20, TemplateExpiration: time.Second})
	toLearn := make(chan *Scratch)
	back := make(chan *Scratch, 8)
	for range 8 {
		back <- &Scratch{}
	}
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				s := <-back
				svc := fmt.Sprintf("svc-%d", i%3)
				got, _ := c.Template(s, svc, fmt.Sprintf("GET /users/%s/x%d", letters(i*p%50), i%7))
				if !strings.HasPrefix(got, "GET /users/") {
					panic(got)
				}
				toLearn <- s
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		now := clock
		for s := range toLearn {
			now += int64(time.Millisecond)
			c.Learn(s, now)
			c.Publish()
			if now%int64(100*time.Millisecond) == 0 {
				c.Expire(now)
			}
			back <- s
		}
	}()
	wg.Wait()
	close(toLearn)
	<-done
	require.Positive(t, c.Templates())
}

// checkTree checks what the learner's index-based trees must keep: every node of a service is
// reachable from its root and found by its (parent, edge) in the children index, the index
// holds nothing else, the child counts and the live edge bytes add up, and every template
// listed is live where it ends or dead and nowhere.
func checkTree(t *testing.T, l *learner) {
	t.Helper()
	reached, edges, templates := 0, 0, 0
	var walk func(n int32)
	walk = func(n int32) {
		nd := l.nodes[n]
		require.True(t, nd.used, "node %d", n)
		reached++
		edges += int(nd.edgeLen)
		if nd.tmpl != 0 {
			templates++
			require.Equal(t, n, l.tmpls[nd.tmpl].node)
			require.False(t, l.tmpls[nd.tmpl].dead)
		}
		k := int32(0)
		for c := nd.first; c != 0; c = l.nodes[c].next {
			require.Equal(t, n, l.nodes[c].parent)
			require.Equal(t, c, l.child(n, l.edge(c)), "child %d of %d found by its edge", c, n)
			k++
			walk(c)
		}
		require.Equal(t, nd.nChildren, k)
	}
	held := 0
	for _, sv := range l.services {
		walk(sv.root)
		held += sv.count
		for _, tm := range sv.order[sv.head:] {
			if tp := l.tmpls[tm]; !tp.dead {
				require.Equal(t, tm, l.nodes[tp.node].tmpl)
			}
		}
	}
	require.Equal(t, held, templates)
	require.Equal(t, l.held, held)
	require.Equal(t, reached, len(l.nodes)-1-len(l.freeNodes), "nodes neither reachable nor free")
	require.Equal(t, reached-len(l.services), l.children.n, "index entries")
	require.Equal(t, l.edgesLive, edges)
}

// Two positions that fold into one when their parent merges keep what either had learned: a
// merged one makes the result merged, and under it every word is the wildcard, whichever of
// the two the merge meets first.
func TestFoldedPositionStaysMerged(t *testing.T) {
	for _, order := range [][]string{{"x", "y"}, {"y", "x"}} {
		h := newHarness(t, Config{MaxChildren: 2, MaxTemplatesPerService: 100})
		for _, p := range order {
			if p == "x" { // GET /wx: a merged position, its words {*}
				h.send("s", "GET /wx/wa", "GET /wx/wb", "GET /wx/wc", "GET /wx/wd")
			} else { // GET /wy: one word, not merged
				h.send("s", "GET /wy/wa")
			}
		}
		require.Equal(t, "GET /wx/{*}", h.one("s", "GET /wx/wz"), "order %v", order)
		// A third position after GET merges it: /wx and /wy fold into /{*}.
		h.send("s", "GET /wq/wa")
		h.send("s", "GET /wr/wa")
		require.Equal(t, "GET /{*}/{*}", h.one("s", "GET /wz/we"), "order %v", order)
		require.Equal(t, "GET /{*}/{*}", h.one("s", "GET /wz/wf"), "order %v", order)
		checkTree(t, h.c.l)
	}
}

// Under random names, merges, evictions and expiry, the index-based trees stay consistent
// (checkTree), and the edges' arena stays within its bound.
func TestTreeStaysConsistent(t *testing.T) {
	words := []string{"GET", "POST", "/users", "/orders", "/x", "/y", " ", "/", ":", "a", "b"}
	for seed := range 12 {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		h := newHarness(t, Config{MaxChildren: 2 + r.IntN(6), MaxTemplatesPerService: 5 + r.IntN(300),
			TemplateExpiration: time.Duration(r.IntN(3)) * 30 * time.Second})
		for i := range 4000 {
			var name strings.Builder
			for range 1 + r.IntN(5) {
				switch r.IntN(4) {
				case 0:
					name.WriteString(fmt.Sprintf("/%d", r.IntN(1000)))
				case 1:
					name.WriteString("/" + letters(r.IntN(12)))
				default:
					name.WriteString(words[r.IntN(len(words))])
				}
			}
			h.c.Template(&h.s, fmt.Sprintf("s%d", r.IntN(4)), name.String())
			if r.IntN(8) == 0 {
				clock += int64(time.Second) * int64(r.IntN(5))
				h.learn()
				if i%10 == 0 {
					checkTree(t, h.c.l)
				}
			}
			if r.IntN(500) == 0 {
				h.c.Expire(clock)
				checkTree(t, h.c.l)
			}
		}
		l := h.c.l
		require.LessOrEqual(t, len(l.edges), 2*l.edgesLive+4096)
	}
}
