// Package dimglob decides which attribute keys the glob dimensions of a series family take
// (`dimensions: [{glob: "k8s.*.name"}]`): the keys that one of the family's patterns matches,
// less those the family already labels otherwise (its named dimensions, the attributes the
// connector writes itself). Patterns have spanmetrics' syntax and separator: they are
// compiled by the same library (github.com/gobwas/glob) with '.' as the separator, so `*`
// matches one dotted segment, `**` any number, and a key matches whatever spanmetrics matches.
//
// A span has tens of attributes and a family can have several patterns, so Answers remembers
// the answer per key for all producers: a producer pays one map lookup per attribute, and the
// patterns run once per distinct key. Neither matching nor a lookup allocates.
package dimglob // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/dimglob"

import (
	"fmt"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/gobwas/glob"
)

// Separator is the character `*` does not cross, as in spanmetrics.
const Separator = '.'

// Compile compiles one pattern as spanmetrics does.
func Compile(pattern string) (glob.Glob, error) { return glob.Compile(pattern, Separator) }

// Set is the patterns of one family and the keys it leaves to others. It is immutable, so
// the producers share it.
type Set struct {
	patterns []string
	globs    []glob.Glob
	skip     map[string]struct{}
}

// NewSet compiles patterns; keys in skip are never taken, whatever matches them.
func NewSet(patterns, skip []string) (*Set, error) {
	s := &Set{patterns: patterns, skip: make(map[string]struct{}, len(skip))}
	for _, p := range patterns {
		g, err := Compile(p)
		if err != nil {
			return nil, fmt.Errorf("glob %q: %w", p, err)
		}
		s.globs = append(s.globs, g)
	}
	for _, k := range skip {
		s.skip[k] = struct{}{}
	}
	return s, nil
}

// Patterns returns the patterns, in configuration order.
func (s *Set) Patterns() []string { return s.patterns }

// Match reports whether the family takes the attribute key: a pattern matches it and it is
// not skipped.
func (s *Set) Match(key string) bool {
	if _, ok := s.skip[key]; ok {
		return false
	}
	for _, g := range s.globs {
		if g.Match(key) {
			return true
		}
	}
	return false
}

// AnswersLimit is how many keys Answers remembers. Attribute keys are few in practice (the
// instrumentation's vocabulary); keys made of IDs are not, and beyond the limit a key is
// matched each time it comes, without being remembered, so that memory stays bounded.
const AnswersLimit = 4096

// maxKey is the longest key remembered: a key longer than this is matched each time.
const maxKey = 256

// Answers remembers Set.Match per key for all producers: an immutable map behind an atomic
// pointer, read without a lock and replaced by a copy with the new keys (Learn), so that a
// producer pays one lookup per attribute once its keys are known, whichever of the pooled
// batches it reduces into, and knowing them costs no memory per batch. Keys stop coming once
// the instrumentation's vocabulary is known: the copies are a warm-up cost.
type Answers struct {
	set *Set
	m   atomic.Pointer[map[string]bool]
}

// NewAnswers returns the answers of set, none known yet.
func NewAnswers(set *Set) *Answers {
	a := &Answers{set: set}
	a.m.Store(&map[string]bool{})
	return a
}

// Set returns the set answered for.
func (a *Answers) Set() *Set { return a.set }

// Lookup returns whether the set takes key, and whether the answer was known. An unknown key
// is matched on the spot (without allocating); the caller lists it for Learn.
func (a *Answers) Lookup(key string) (taken, known bool) {
	if v, ok := (*a.m.Load())[key]; ok {
		return v, true
	}
	return a.set.Match(key), false
}

// Learn publishes the answers for keys that are not known yet, copying them (a key may point
// into a request's memory, which the answers must not keep alive), while fewer than
// AnswersLimit are known. Concurrent calls each publish what they learnt.
func (a *Answers) Learn(keys []string) {
	for {
		old := a.m.Load()
		n := 0
		for _, k := range keys {
			if _, ok := (*old)[k]; !ok && len(k) <= maxKey {
				n++
			}
		}
		if n == 0 || len(*old) >= AnswersLimit {
			return
		}
		m := make(map[string]bool, len(*old)+n)
		maps.Copy(m, *old)
		for _, k := range keys {
			if _, ok := m[k]; ok || len(k) > maxKey {
				continue
			}
			if len(m) >= AnswersLimit {
				break
			}
			m[strings.Clone(k)] = a.set.Match(k)
		}
		if a.m.CompareAndSwap(old, &m) {
			return
		}
	}
}

// Len returns the number of keys known.
func (a *Answers) Len() int { return len(*a.m.Load()) }
