package dimglob

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The syntax and separator of spanmetrics' glob dimensions: `*` stays within a dotted segment,
// `**` crosses them, `?`, classes and alternatives as gobwas/glob has them.
func TestMatchLikeSpanmetrics(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		match   []string
		other   []string
	}{
		{"k8s.*.name", []string{"k8s.pod.name", "k8s.cluster.name"}, []string{"k8s.cluster.label.name", "k8s.name", "k8s.pod.uid"}},
		{"db.**.name", []string{"db.a.name", "db.a.b.name"}, []string{"db.name.x", "dbx.a.name"}},
		{"http.*", []string{"http.method", "http.route"}, []string{"http.request.method", "http"}},
		{"http.**", []string{"http.method", "http.request.method"}, []string{"https.method"}},
		{"{http,rpc}.method", []string{"http.method", "rpc.method"}, []string{"db.method"}},
		{"region?", []string{"region1"}, []string{"region", "region12"}},
		{"tier.[a-c]", []string{"tier.a", "tier.c"}, []string{"tier.d"}},
		{`a\*b`, []string{"a*b"}, []string{"axb"}},
	} {
		s, err := NewSet([]string{tc.pattern}, nil)
		require.NoError(t, err)
		for _, k := range tc.match {
			require.True(t, s.Match(k), "%s matches %s", tc.pattern, k)
		}
		for _, k := range tc.other {
			require.False(t, s.Match(k), "%s does not match %s", tc.pattern, k)
		}
	}
	_, err := NewSet([]string{"db.["}, nil)
	require.ErrorContains(t, err, `glob "db.["`)
}

// Any pattern of the set takes a key; skipped keys are never taken.
func TestSetSkips(t *testing.T) {
	s, err := NewSet([]string{"http.*", "k8s.**"}, []string{"http.method", "sampling.method"})
	require.NoError(t, err)
	require.Equal(t, []string{"http.*", "k8s.**"}, s.Patterns())
	require.True(t, s.Match("http.route"))
	require.True(t, s.Match("k8s.pod.name"))
	require.False(t, s.Match("http.method"))
	require.False(t, s.Match("db.system"))
}

// Answers answer as their set does, know a key once it is learnt, up to AnswersLimit keys,
// and keep answering beyond it without knowing.
func TestAnswersAnswerAsTheirSet(t *testing.T) {
	s, err := NewSet([]string{"http.*"}, []string{"http.method"})
	require.NoError(t, err)
	a := NewAnswers(s)
	require.Same(t, s, a.Set())
	keys := []string{"http.route", "http.method", "db.system", "http.request.method"}
	for _, k := range keys {
		taken, known := a.Lookup(k)
		require.Equal(t, s.Match(k), taken, k)
		require.False(t, known)
	}
	a.Learn(keys)
	a.Learn(keys) // nothing new: no copy
	for _, k := range keys {
		taken, known := a.Lookup(k)
		require.Equal(t, s.Match(k), taken, k)
		require.True(t, known, k)
	}
	require.Equal(t, 4, a.Len())

	var many []string
	for i := range AnswersLimit + 10 {
		many = append(many, fmt.Sprintf("http.id%d", i))
	}
	a.Learn(many)
	require.Equal(t, AnswersLimit, a.Len())
	taken, known := a.Lookup(many[len(many)-1])
	require.True(t, taken, "beyond the limit, still matched")
	require.False(t, known)

	long := "http." + strings.Repeat("x", maxKey)
	b := NewAnswers(s)
	b.Learn([]string{long})
	taken, known = b.Lookup(long)
	require.True(t, taken)
	require.False(t, known, "too long to remember")
}

// Producers learning at once all publish what they learnt.
func TestAnswersLearnConcurrently(t *testing.T) {
	s, err := NewSet([]string{"k.*"}, nil)
	require.NoError(t, err)
	a := NewAnswers(s)
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				a.Learn([]string{fmt.Sprintf("k.%d", p*50+i)})
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 200, a.Len())
}

// Known keys, and keys matched on the spot, cost no allocation; nor do the patterns.
func TestLookupsAllocateNothing(t *testing.T) {
	s, err := NewSet([]string{"k8s.*.name", "db.**.name", "{http,rpc}.*"}, nil)
	require.NoError(t, err)
	a := NewAnswers(s)
	keys := []string{"k8s.pod.name", "db.a.b.name", "http.route", "service.version", "rpc.method"}
	a.Learn(keys[:3])
	require.Zero(t, testing.AllocsPerRun(100, func() {
		for _, k := range keys {
			a.Lookup(k)
		}
	}))
}
