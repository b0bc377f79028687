package clustering // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"

import (
	"sync/atomic"
)

// learner holds, per service, a tree of the templates it has learned. It is owned by one
// goroutine (the one calling Learn, Publish and Expire) and takes no lock; producers read
// only what Publish copies out of it (snapshot.go), and the template's lastSeen.
//
// A node is a prefix of names, its children the edges (tokens.go) that followed it. When a
// node is about to get more than maxChildren distinct children, the position is merged: every
// child's word becomes Wildcard, children that now have the same edge are merged
// recursively (templates included), and every later name gets Wildcard there. The root,
// the first word of a name, is never merged: it is the operation ("GET", "SELECT",
// "getUser"), and a service with many operations must keep them apart.
type learner struct {
	maxChildren  int
	maxTemplates int   // per service
	maxTotal     int   // all services: MaxTemplates
	expiration   int64 // seconds; 0: never
	services     map[string]*service
	servicesDiff bool       // a service was added or removed since the last publish
	dirty        []*service // services whose snapshot is stale
	held         int        // templates held, all services
	path         []byte     // scratch: a node's path
}

type service struct {
	name  string
	root  *node
	count int         // live templates
	order []*template // templates in the order they were learned, dead ones among them
	head  int         // order[:head] has been evicted
	slot  *slot
	dirty bool
}

type node struct {
	parent   *node
	edge     string // the edge from parent
	children map[string]*node
	merged   bool
	tmpl     *template // a template ends here
}

// template is a learned name. Only lastSeen is shared: producers stamp it (snapshot.go).
type template struct {
	name     string
	node     *node
	lastSeen atomic.Int64 // unix seconds
	queued   int64        // lastSeen when it was (re)queued for eviction
	dead     bool
}

func newLearner(c Config) *learner {
	return &learner{
		maxChildren:  c.MaxChildren,
		maxTemplates: c.MaxTemplatesPerService,
		maxTotal:     MaxTemplates,
		expiration:   int64(c.TemplateExpiration.Seconds()),
		services:     map[string]*service{},
	}
}

// learn adds name, a name of service svc as a producer has already rewritten it, to the
// tree: it walks the tree, taking Wildcard where a position is merged, merges the position
// that gets one child too many, and keeps a template where the walk ends.
func (l *learner) learn(svc, name []byte, now int64) {
	sv := l.services[string(svc)]
	if l.held >= l.maxTotal && (sv == nil || sv.count == 0) {
		return // room is made within a service, never taken from another
	}
	if sv == nil {
		if len(l.services) >= MaxServices {
			return
		}
		sv = &service{name: string(svc), root: &node{}, slot: &slot{}}
		l.services[sv.name] = sv
		l.servicesDiff = true
	}
	n := sv.root
	for i := 0; i < len(name); {
		w, end := nextEdge(bytesString(name), i)
		sep, word, whole := name[i:w], name[w:end], name[i:end]
		i = end
		var child *node
		if !n.merged || len(word) == 0 {
			child = n.children[string(whole)] // no allocation: the conversion is only a key
		} else {
			child = n.children[string(sep)+Wildcard]
		}
		if child != nil {
			n = child
			continue
		}
		if !n.merged && n != sv.root && len(n.children) >= l.maxChildren {
			l.merge(sv, n)
		}
		edge := string(whole)
		if n.merged && len(word) > 0 {
			edge = string(sep) + Wildcard
		}
		if child = n.children[edge]; child == nil {
			child = &node{parent: n, edge: edge}
			if n.children == nil {
				n.children = map[string]*node{}
			}
			n.children[edge] = child
			l.markDirty(sv)
		}
		n = child
	}
	if n.tmpl != nil {
		n.tmpl.lastSeen.Store(now)
		return
	}
	t := &template{name: string(l.pathOf(n)), node: n, queued: now}
	t.lastSeen.Store(now)
	n.tmpl = t
	sv.order = append(sv.order, t)
	sv.count++
	l.held++
	l.markDirty(sv)
	if sv.count > l.maxTemplates || l.held > l.maxTotal {
		l.evict(sv, t)
	}
}

func (l *learner) markDirty(sv *service) {
	if !sv.dirty {
		sv.dirty = true
		l.dirty = append(l.dirty, sv)
	}
}

// pathOf returns the name n stands for, in l.path.
func (l *learner) pathOf(n *node) []byte {
	depth := 0
	for p := n; p.parent != nil; p = p.parent {
		depth += len(p.edge)
	}
	l.path = append(l.path[:0], make([]byte, depth)...)
	for p := n; p.parent != nil; p = p.parent {
		depth -= len(p.edge)
		copy(l.path[depth:], p.edge)
	}
	return l.path
}

// merge makes n a merged position: its children are folded by wildcardEdge, and the
// templates below it are renamed.
func (l *learner) merge(sv *service, n *node) {
	n.merged = true
	old := n.children
	n.children = make(map[string]*node, 2)
	for edge, c := range old {
		w := wildcardEdge(edge)
		if dst := n.children[w]; dst != nil {
			l.mergeInto(sv, dst, c)
			continue
		}
		c.edge = w
		n.children[w] = c
	}
	l.rename(n, l.pathOf(n))
	l.compact(sv) // the templates merged into others are dead entries of sv.order
	l.markDirty(sv)
}

// mergeInto moves src's subtree into dst. Where both hold a template, dst's is kept, and
// seen as lately as either was.
func (l *learner) mergeInto(sv *service, dst, src *node) {
	for edge, c := range src.children {
		if d := dst.children[edge]; d != nil {
			l.mergeInto(sv, d, c)
			continue
		}
		c.parent = dst
		if dst.children == nil {
			dst.children = map[string]*node{}
		}
		dst.children[edge] = c
	}
	if t := src.tmpl; t != nil {
		src.tmpl = nil
		if dst.tmpl == nil {
			dst.tmpl, t.node = t, dst
		} else {
			if seen := t.lastSeen.Load(); seen > dst.tmpl.lastSeen.Load() {
				dst.tmpl.lastSeen.Store(seen)
			}
			t.dead, t.node = true, nil
			sv.count--
			l.held--
		}
	}
	if !dst.merged && len(dst.children) > l.maxChildren {
		l.merge(sv, dst)
	}
}

// rename gives the templates of n's subtree the names of their paths; prefix is n's.
func (l *learner) rename(n *node, prefix []byte) {
	if n.tmpl != nil {
		n.tmpl.name = string(prefix)
	}
	for _, c := range n.children {
		l.rename(c, append(prefix, c.edge...))
	}
}

// evict removes templates of sv, oldest learned first, until it holds maxTemplates and all
// services maxTotal; keep (the template just learned) stays. A template seen since it was queued gets a second
// chance at the back of the queue, once per pass.
func (l *learner) evict(sv *service, keep *template) {
	passes := len(sv.order) - sv.head
	for (sv.count > l.maxTemplates || l.held > l.maxTotal) && sv.count > 1 && sv.head < len(sv.order) {
		t := sv.order[sv.head]
		sv.order[sv.head] = nil
		sv.head++
		switch {
		case t.dead:
		case t == keep || passes > 0 && t.lastSeen.Load() > t.queued:
			t.queued = t.lastSeen.Load()
			sv.order = append(sv.order, t)
		default:
			l.remove(sv, t)
		}
		passes--
	}
	l.compact(sv)
}

// remove forgets t, and the nodes that held nothing but it.
func (l *learner) remove(sv *service, t *template) {
	n := t.node
	t.dead, t.node = true, nil
	n.tmpl = nil
	sv.count--
	l.held--
	for n != sv.root && n.tmpl == nil && len(n.children) == 0 {
		delete(n.parent.children, n.edge)
		n = n.parent
	}
	l.markDirty(sv)
}

// compact drops the evicted and dead entries of sv.order once they outnumber the live ones,
// so that it stays within about twice maxTemplates.
func (l *learner) compact(sv *service) {
	if len(sv.order)-sv.count < sv.count+16 {
		return
	}
	live := sv.order[:0]
	for _, t := range sv.order[sv.head:] {
		if !t.dead {
			live = append(live, t)
		}
	}
	clear(sv.order[len(live):])
	sv.order, sv.head = live, 0
}

// expire removes the templates not seen for the expiration, and the services left without
// any.
func (l *learner) expire(now int64) {
	if l.expiration <= 0 {
		return
	}
	for name, sv := range l.services {
		for _, t := range sv.order[sv.head:] {
			if !t.dead && now-t.lastSeen.Load() > l.expiration {
				l.remove(sv, t)
			}
		}
		l.compact(sv)
		if sv.count == 0 {
			delete(l.services, name)
			l.servicesDiff = true
		}
	}
}
