// Package store holds the state of every series cachedprom exports: data
// points are folded into it as they come (cumulative state; deltas
// accumulated), and the renderer reads it a frame of rows at a time. Its
// state is flat tables of numbers (rows, label sets, bucket counts) outside
// the Go heap, found through tables of integers, so the garbage collector
// has nothing to scan in it.
package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"hash/maphash"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/naming"
)

// Options configure a Store.
type Options struct {
	// Names names metrics and labels; the Store calls it under its lock.
	Names *naming.Namer
	// ConstLabels are added to every series (const_labels); a series' own
	// label of the same name wins.
	ConstLabels map[string]string
	// MaxSeries caps the label sets held (max_series); beyond it points go
	// to their family's overflow series. 0 means no cap.
	MaxSeries int
	// WithoutScopeInfo leaves the otel_scope_* labels off (without_scope_info).
	WithoutScopeInfo bool
	// Exemplars keeps the exemplars of counters and explicit histograms,
	// which OpenMetrics shows (enable_open_metrics). Exponential
	// histograms' exemplars are kept regardless, for the protobuf body.
	Exemplars bool
	// KeepIdentifyingResourceAttrs keeps service.name, service.namespace
	// and service.instance.id on target_info (the
	// pkg.prometheus.KeepIdentifyingResourceAttributes gate).
	KeepIdentifyingResourceAttrs bool
	// Logger logs the rare conflicts a metric runs into; nil logs nothing.
	Logger *zap.Logger
}

// Store holds all series state. Ingest and the renderer's short per-frame
// copies take its lock; scrapes never do.
type Store struct {
	mu     sync.Mutex
	t      tables
	in     ingest
	names  *naming.Namer
	closed bool // the off-heap memory is released: nothing is read or written
}

// New returns an empty store.
func New(opts Options) *Store {
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	s := &Store{t: newTables(opts.Exemplars), names: opts.Names}
	s.in = ingest{
		t:                &s.t,
		names:            opts.Names,
		logger:           logger,
		maxSeries:        opts.MaxSeries,
		withoutScopeInfo: opts.WithoutScopeInfo,
		keepIdentifying:  opts.KeepIdentifyingResourceAttrs,
		seed:             maphash.MakeSeed(),
		seed2:            maphash.MakeSeed(),
	}
	for k, v := range opts.ConstLabels {
		s.in.constLbls = append(s.in.constLbls, labelPair{name: k, value: v, origin: originConst})
	}
	return s
}

// Consume folds a batch received at now into the store. It returns true
// when anything changed.
func (s *Store) Consume(md pmetric.Metrics, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	return s.in.consume(md, now.UnixNano())
}

// Expire removes the series not updated since before cutoff and returns how
// many it removed. After removals, label sets and pairs are compacted when
// most of them are dead and the tables shrink when mostly empty, so memory
// falls after a cardinality burst.
func (s *Store) Expire(cutoff time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0
	}
	return s.t.expire(cutoff.UnixNano())
}

// Close releases the off-heap memory; the store is empty and inert
// afterwards, so a late call cannot touch unmapped memory.
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.t.release()
}

// TakeEvents returns what ingest counted since the last call.
func (s *Store) TakeEvents() Events {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.t.events
	s.t.events = Events{}
	return ev
}

// Sizes is how much the store holds.
type Sizes struct {
	Rows      int // series
	LabelSets int // the unit of max_series
	Families  int // live families
	Resources int // job/instance pairs, the target_info series
	Writers   int // writers tracked one by one, of merged series
	// OffHeapBytes is what the rows, the explicit histograms' bucket
	// counts and the label sets map outside the Go heap.
	OffHeapBytes int
}

// Sizes returns how much the store holds now.
func (s *Store) Sizes() Sizes {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Sizes{
		Rows:         s.t.rows.live,
		LabelSets:    s.t.labels.live(),
		Families:     len(s.t.families.byName),
		Resources:    len(s.t.resources.byKey),
		Writers:      len(s.t.writers),
		OffHeapBytes: s.t.mapped(),
	}
}

// TargetInfoName is the name of the target_info family.
func (s *Store) TargetInfoName() string { return s.names.TargetInfoName() }

// Families appends the live families, sorted by name, to fams and the
// target_info label sets, sorted, to targets; hidden is the number of
// series left out because their sample names collide with another
// family's (those families come back with Hidden set).
func (s *Store) Families(fams []Family, targets []string) (_ []Family, _ []string, hidden int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return listFamilies(&s.t, s.names, fams, targets)
}

// CopyRows fills f with the rows of family fam from position from on, at
// most a frame's worth, and returns the position after them; f is empty
// when there is nothing left. withTimestamps copies the points'
// timestamps; native copies exponential histograms' buckets, which only the
// protobuf body and the classic fallback show.
func (s *Store) CopyRows(f *Frame, fam uint32, from int, withTimestamps, native bool) int {
	f.reset()
	s.mu.Lock()
	defer s.mu.Unlock()
	return f.fill(&s.t, fam, from, withTimestamps, native)
}
