package aggregate // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/aggregate"

import (
	"bytes"
	"slices"

	"github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/series"
	"github.com/otelcol-red/otelcol-red/internal/hash"
)

// resource is what the aggregator keeps of one resource: its identity and service, when it was
// last seen, and what the limits count and keep per resource.
type resource struct {
	hash     uint64
	key      []byte
	svc      uint32
	lastSeen int64
	live     bool
	series   [series.MaxFamilies]int32  // live series per family (aggregation_cardinality_limit, cumulative)
	touched  [series.MaxFamilies]int32  // series touched this interval (aggregation_cardinality_limit, delta)
	overflow [series.MaxFamilies]uint32 // aggregation_cardinality_limit's overflow series id+1, 0 when none

	// max_series and max_series_per_service's overflow series per span kind and status code
	// (capOverflowSlot), id+1, 0 when none.
	capOverflow [series.MaxFamilies][series.CapOverflowSlots]uint32
}

// resourceTable holds the resources by id, found by the hash of their key (the sorted,
// filtered attributes), and their services by id, with the series each service has per family
// (max_series_per_service). Owned by the aggregator goroutine.
type resourceTable struct {
	all   []resource
	index hash.Index
	free  []uint32
	live  int

	services  map[string]uint32
	svcNames  []string
	svcRefs   []int32 // resources per service id
	svcFree   []uint32
	svcSeries [series.MaxFamilies][]int32 // series per service id, per family (a demoted series excluded)

	dead []uint32 // expiring's scratch
}

func newResourceTable() *resourceTable { return &resourceTable{services: map[string]uint32{}} }

// idOf returns the id of batch resource br, adding the resource, and announcing it with its
// output attributes in active, when it is new.
func (rt *resourceTable) idOf(b *series.Batch, br *series.BatchResource, active *series.DeltaBuffer) uint32 {
	key := b.Bytes(br.Key)
	p := rt.index.Probe(br.Hash)
	for rid, ok := p.Next(); ok; rid, ok = p.Next() {
		if r := &rt.all[rid]; bytes.Equal(r.key, key) {
			r.lastSeen = max(r.lastSeen, b.TS)
			return rid
		}
	}
	rid, ok := reuseID(&rt.free)
	if !ok {
		rid = uint32(len(rt.all))
		rt.all = append(rt.all, resource{})
	}
	rt.all[rid] = resource{
		hash: br.Hash, key: slices.Clone(key), svc: rt.serviceID(b.Bytes(br.Service)),
		lastSeen: b.TS, live: true,
	}
	rt.index.Insert(br.Hash, rid)
	rt.live++
	off := len(active.ResAttrs)
	active.ResAttrs = append(active.ResAttrs, b.Bytes(br.Full)...)
	active.NewResources = append(active.NewResources, series.AnnouncedResource{ID: rid, Attrs: series.Ref{Off: uint32(off), N: br.Full.N}})
	return rid
}

func (rt *resourceTable) serviceID(name []byte) uint32 {
	if id, ok := rt.services[string(name)]; ok {
		rt.svcRefs[id]++
		return id
	}
	id, ok := reuseID(&rt.svcFree)
	if !ok {
		id = uint32(len(rt.svcRefs))
		rt.svcRefs = append(rt.svcRefs, 0)
		rt.svcNames = append(rt.svcNames, "")
		for f := range rt.svcSeries {
			rt.svcSeries[f] = append(rt.svcSeries[f], 0)
		}
	}
	rt.services[string(name)] = id
	rt.svcNames[id] = string(name)
	rt.svcRefs[id] = 1
	return id
}

// expiring marks the resources that expire at now as no longer live and returns them: those
// idle for idle ns (0: never), then, beyond cacheSize live resources, the least recently seen,
// like spanmetrics' LRU of resources. Their series go before release removes them.
func (rt *resourceTable) expiring(now, idle int64, cacheSize int) []uint32 {
	dead := rt.dead[:0]
	for rid := range rt.all {
		r := &rt.all[rid]
		if r.live && idle > 0 && now-r.lastSeen >= idle {
			dead = append(dead, uint32(rid))
		}
	}
	if over := rt.live - len(dead) - cacheSize; over > 0 {
		var cand []uint32
		for rid := range rt.all {
			if r := &rt.all[rid]; r.live && !slices.Contains(dead, uint32(rid)) {
				cand = append(cand, uint32(rid))
			}
		}
		slices.SortStableFunc(cand, func(x, y uint32) int {
			lx, ly := rt.all[x].lastSeen, rt.all[y].lastSeen
			switch {
			case lx < ly:
				return -1
			case lx > ly:
				return 1
			}
			return 0
		})
		dead = append(dead, cand[:over]...)
	}
	for _, rid := range dead {
		rt.all[rid].live = false
	}
	rt.dead = dead
	return dead
}

// release removes resource rid, and its service when it was the service's last resource; it
// reports that service, freed, and whether it was. The id is reused once reclaimed.
func (rt *resourceTable) release(rid uint32) (svc uint32, freed bool) {
	r := &rt.all[rid]
	svc = r.svc
	rt.index.Delete(r.hash, rid)
	if rt.svcRefs[svc]--; rt.svcRefs[svc] == 0 {
		delete(rt.services, rt.svcNames[svc])
		rt.svcNames[svc] = ""
		rt.svcFree = append(rt.svcFree, svc)
		freed = true
	}
	*r = resource{}
	rt.live--
	return svc, freed
}

// reclaim makes ids released at an earlier swap reusable: the flusher has forgotten them.
func (rt *resourceTable) reclaim(ids []uint32) { rt.free = append(rt.free, ids...) }

// startInterval forgets the series each resource touched in the interval that ended.
func (rt *resourceTable) startInterval() {
	for i := range rt.all {
		rt.all[i].touched = [series.MaxFamilies]int32{}
	}
}
