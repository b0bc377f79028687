package render

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/promtest"
)

func TestRetireFreesOnlyUnreadSnapshots(t *testing.T) {
	newSnap := func() *Snapshot {
		s := &Snapshot{}
		b := &s.bodies[BodyText]
		_, _ = b.gzipBuf.Write([]byte("body"))
		b.gzip = b.gzipBuf.Bytes()
		return s
	}
	gzipOf := func(s *Snapshot) []byte { return s.bodies[BodyText].gzip }
	var r Snapshots
	a, b, c := newSnap(), newSnap(), newSnap()
	a.Hold() // a scrape still writing a
	r.Retire(a)
	r.Retire(b)
	assert.Equal(t, []*Snapshot{a, b}, r.retired, "a read snapshot stays")
	assert.Equal(t, []byte("body"), gzipOf(a))

	a.Release()
	c.Hold() // a scrape still writing c as a render retires it
	r.Retire(c)
	assert.Equal(t, []*Snapshot{c}, r.retired, "one spare, the newest")
	assert.Nil(t, gzipOf(a))
	assert.Nil(t, gzipOf(b))
	assert.Equal(t, []byte("body"), gzipOf(c), "a spare being read keeps its pages")

	c.Release()
	r.DiscardSpares()
	assert.Equal(t, []*Snapshot{c}, r.retired)
	assert.Nil(t, gzipOf(c), "a spare nobody reads gives its pages back")
	assert.Positive(t, c.bodies[BodyText].gzipBuf.Cap(), "and keeps its mapping for the next render")
	assert.Empty(t, c.bodies[BodyText].gzipBuf.Bytes())

	d := newSnap()
	d.Hold()
	r.FreeAll(d)
	assert.Empty(t, r.retired)
	assert.Nil(t, gzipOf(c))
	assert.Equal(t, []byte("body"), gzipOf(d), "a snapshot still read is not unmapped")
	d.Release()
	d.free()
}

// TestRenderGivesTheSparesPagesBack: a render retires the snapshot it
// replaces, which gives its pages back and keeps its mapping, and the next
// render writes its body into that mapping.
func TestRenderGivesTheSparesPagesBack(t *testing.T) {
	s := testStore(nil)
	r := NewSnapshots(Options{}, `"test-`)
	var published *Snapshot
	publish := func() *Snapshot {
		snap := r.Render(s, Wants{})
		r.Retire(published)
		published = snap
		return snap
	}
	t.Cleanup(func() { r.FreeAll(published) })
	mapping := func(s *Snapshot) *byte { return unsafe.SliceData(s.bodies[BodyText].gzipBuf.Bytes()) }
	s.Consume(promtest.SpanmetricsLike(2000, 0), time.Now())
	first := publish()
	want := promtest.Gunzip(t, first.Body(BodyText).Gzip)
	require.NotEmpty(t, want)

	publish() // retires the first snapshot: the spare
	require.Equal(t, []*Snapshot{first}, r.retired)
	assert.Empty(t, first.bodies[BodyText].gzipBuf.Bytes(), "the spare's body was given back")
	assert.Positive(t, first.bodies[BodyText].gzipBuf.Cap(), "its mapping is kept")

	// The next render writes its body into the spare's mapping again.
	s.Consume(promtest.SpanmetricsLike(2000, 1), time.Now())
	third := publish()
	require.Same(t, mapping(first), mapping(third), "the spare's mapping reused")
	got := promtest.Gunzip(t, third.Body(BodyText).Gzip)
	assert.Len(t, got, third.Body(BodyText).Len)
	assert.NotEqual(t, string(want), string(got), "the step changed the values")
}

// TestKeptBodyLetGoPastTheLimit: a render asked to keep the text for
// identity clients and expecting a body that fits (the first render knows
// only the rows: at least minRowBytes each) collects it while it streams
// and lets it go once it outgrows MaxKeptBody; the next render, expecting a
// body too large, does not try. Either way only the gzip form is held.
func TestKeptBodyLetGoPastTheLimit(t *testing.T) {
	s := testStore(nil, promtest.RedDeltaBatch(0, 5000, promtest.TestBase, promtest.TestBase.Add(time.Minute)))
	t.Cleanup(s.Close)
	r := NewSnapshots(Options{}, `"test-`)
	var published *Snapshot
	t.Cleanup(func() { r.FreeAll(published) })
	require.LessOrEqual(t, s.Sizes().Rows*minRowBytes, MaxKeptBody, "the first render expects a body that fits")
	for i := range 2 {
		snap := r.Render(s, Wants{KeepText: true})
		r.Retire(published)
		published = snap
		text := snap.Body(BodyText)
		require.Greater(t, text.Len, MaxKeptBody)
		assert.False(t, text.Kept, "render %d", i)
		assert.Nil(t, text.Plain, "render %d", i)
		assert.Len(t, promtest.Gunzip(t, text.Gzip), text.Len)
		assert.Greater(t, r.expectedLen(BodyText), MaxKeptBody, "the next render expects a body too large")
	}
}
