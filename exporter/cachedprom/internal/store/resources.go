package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

import (
	"slices"
)

// resource is one job/instance pair, the source of a target_info series.
type resource struct {
	id     uint32
	key    string
	labels string // target_info's rendered label set; empty when refused
	refs   int    // rows of the resource
}

// resources holds the resources by job/instance key and by id: a row keeps
// its resource's id + 1 (0 for none), a number rather than a pointer.
type resources struct {
	byKey map[string]*resource
	byID  []*resource // id - 1 → resource, nil when free
}

func newResources() resources { return resources{byKey: map[string]*resource{}} }

// upsert returns the resource of job and inst, made with the lowest free id
// when new.
func (rs *resources) upsert(job, inst string) *resource {
	key := job + "\xff" + inst
	r, ok := rs.byKey[key]
	if !ok {
		r = &resource{key: key}
		if i := slices.Index(rs.byID, nil); i >= 0 {
			r.id = uint32(i + 1)
			rs.byID[i] = r
		} else {
			rs.byID = append(rs.byID, r)
			r.id = uint32(len(rs.byID))
		}
		rs.byKey[key] = r
	}
	return r
}

// unref drops a row's hold on resource id (+ 1); the last one forgets it.
func (rs *resources) unref(id uint32) {
	r := rs.byID[id-1]
	r.refs--
	if r.refs <= 0 {
		rs.forget(r)
	}
}

// sweep forgets the resources no row holds: a resource whose data points
// were all refused never got a series.
func (rs *resources) sweep() {
	for _, r := range rs.byKey {
		if r.refs <= 0 {
			rs.forget(r)
		}
	}
}

func (rs *resources) forget(r *resource) {
	delete(rs.byKey, r.key)
	rs.byID[r.id-1] = nil
}

// targets appends the label sets of target_info, sorted so that equal
// content renders to equal bytes (and ETag).
func (rs *resources) targets(dst []string) []string {
	for _, r := range rs.byKey {
		if r.refs > 0 && r.labels != "" {
			dst = append(dst, r.labels)
		}
	}
	slices.Sort(dst)
	return dst
}
