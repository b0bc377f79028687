package clustering // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics/internal/clustering"

import (
	"bytes"
	"hash/maphash"
	"sync/atomic"
)

// learner holds, per service, a tree of the templates it has learned. It is owned by one
// goroutine (the one calling Learn, Publish and Expire) and takes no lock; producers read
// only what Publish copies out of it (snapshot.go), and stamp the templates' lastSeen.
//
// A node is a prefix of names, its children the edges (tokens.go) that followed it. When a
// node is about to get more than maxChildren distinct children, the position is merged: every
// child's word becomes Wildcard, children that now have the same edge are merged
// recursively (templates included), and every later name gets Wildcard there. The root,
// the first word of a name, is never merged: it is the operation ("GET", "SELECT",
// "getUser"), and a service with many operations must keep them apart.
//
// The trees hold no Go pointer: nodes and templates are indices into slices of plain
// structs, edges are offsets into one byte arena, and a node's children are found through one
// open-addressing table keyed by (parent, edge). The garbage collector marks every object
// reachable from the heap at each cycle, and the collector runs several times a second under
// load; as objects (a node, its children map, a template, two strings: ~5 per template),
// 25,000 templates doubled the collector's CPU per cycle of the whole process (11 → 22 ms
// with GODEBUG=gctrace=1 in the testbed at 100k series, README.md), where slices of plain
// structs are never scanned.
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
	edgeBuf      []byte     // scratch: an edge being built

	nodes     []node  // nodes[0] is unused: index 0 means "none"
	freeNodes []int32 // unused entries of nodes
	edges     []byte  // the nodes' edges, at node.edgeOff
	edgesLive int     // bytes of edges that live nodes use; the rest is garbage (compactEdges)
	children  childIndex
	tmpls     []template // tmpls[0] is unused, as nodes[0]
	freeTmpls []int32
	lastSeen  *seenStore // per template, stamped by producers
}

type service struct {
	name  string
	root  int32
	count int     // live templates
	order []int32 // templates in the order they were learned, dead ones among them
	head  int     // order[:head] has been evicted
	slot  *slot
	dirty bool
}

type node struct {
	parent            int32
	first, next, prev int32 // the first child; the siblings
	nChildren         int32
	tmpl              int32 // the template that ends here, 0 if none
	edgeOff, edgeLen  uint32
	merged            bool
	used              bool // false in freeNodes
}

// template is a learned name: the node its path ends at. Its name is that path (pathOf), so a
// merge renames it by moving it.
type template struct {
	node   int32
	queued int64 // lastSeen when it was (re)queued for eviction
	dead   bool  // removed, still listed in its service's order
}

func newLearner(c Config) *learner {
	return &learner{
		maxChildren:  c.MaxChildren,
		maxTemplates: c.MaxTemplatesPerService,
		maxTotal:     MaxTemplates,
		expiration:   int64(c.TemplateExpiration.Seconds()),
		services:     map[string]*service{},
		nodes:        make([]node, 1),
		tmpls:        make([]template, 1),
		children:     childIndex{seed: maphash.MakeSeed()},
		lastSeen:     newSeenStore(),
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
		sv = &service{name: string(svc), root: l.newNode(), slot: &slot{}}
		l.services[sv.name] = sv
		l.servicesDiff = true
	}
	n := sv.root
	for i := 0; i < len(name); {
		w, end := nextEdge(bytesString(name), i)
		sep, word, whole := name[i:w], name[w:end], name[i:end]
		i = end
		edge := whole
		if l.nodes[n].merged && len(word) > 0 {
			edge = append(append(l.edgeBuf[:0], sep...), Wildcard...)
			l.edgeBuf = edge
		}
		if child := l.child(n, edge); child != 0 {
			n = child
			continue
		}
		if !l.nodes[n].merged && n != sv.root && int(l.nodes[n].nChildren) >= l.maxChildren {
			l.merge(sv, n)
			if len(word) > 0 {
				edge = append(append(l.edgeBuf[:0], sep...), Wildcard...)
				l.edgeBuf = edge
			}
		}
		child := l.child(n, edge)
		if child == 0 {
			child = l.newNode()
			l.setEdge(child, edge)
			l.attach(n, child)
			l.markDirty(sv)
		}
		n = child
	}
	if t := l.nodes[n].tmpl; t != 0 {
		l.lastSeen.at(t).Store(now)
		return
	}
	t := l.newTemplate(n, now)
	l.nodes[n].tmpl = t
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

// edge returns n's edge, valid until the next edge is set.
func (l *learner) edge(n int32) []byte {
	nd := &l.nodes[n]
	return l.edges[nd.edgeOff : nd.edgeOff+nd.edgeLen]
}

// setEdge gives n (detached from the index) the edge e.
func (l *learner) setEdge(n int32, e []byte) {
	nd := &l.nodes[n]
	l.edgesLive += len(e) - int(nd.edgeLen)
	nd.edgeOff, nd.edgeLen = uint32(len(l.edges)), uint32(len(e))
	l.edges = append(l.edges, e...)
}

// pathOf returns the name n stands for, in l.path.
func (l *learner) pathOf(n int32) []byte {
	depth := 0
	for p := n; l.nodes[p].parent != 0; p = l.nodes[p].parent {
		depth += int(l.nodes[p].edgeLen)
	}
	l.path = append(l.path[:0], make([]byte, depth)...)
	for p := n; l.nodes[p].parent != 0; p = l.nodes[p].parent {
		depth -= int(l.nodes[p].edgeLen)
		copy(l.path[depth:], l.edge(p))
	}
	return l.path
}

// merge makes n a merged position: its children are folded by wildcardEdge; the templates
// below them are renamed by where they now are.
func (l *learner) merge(sv *service, n int32) {
	l.nodes[n].merged = true
	for c := l.takeChildren(n); c != 0; {
		next := l.nodes[c].next
		w := wildcardEdge(string(l.edge(c))) // a copy: setEdge may move the arena
		if dst := l.child(n, []byte(w)); dst != 0 {
			l.mergeInto(sv, dst, c)
		} else {
			if w != string(l.edge(c)) {
				l.setEdge(c, []byte(w))
			}
			l.attach(n, c)
		}
		c = next
	}
	l.compact(sv) // the templates merged into others are dead entries of sv.order
	l.markDirty(sv)
}

// mergeInto moves src's subtree into dst and frees src, which is detached. Where both hold a
// template, dst's is kept, and seen as lately as either was. A merged position stays merged:
// under a merged dst, src's children get Wildcard as their word, and a merged src makes dst
// merged. So the result does not depend on which of two nodes that fold together was met
// first, and no child under a merged position keeps a word (producers would never send it).
func (l *learner) mergeInto(sv *service, dst, src int32) {
	srcMerged := l.nodes[src].merged
	for c := l.takeChildren(src); c != 0; {
		next := l.nodes[c].next
		if l.nodes[dst].merged {
			if w := wildcardEdge(string(l.edge(c))); w != string(l.edge(c)) {
				l.setEdge(c, []byte(w))
			}
		}
		if d := l.child(dst, l.edge(c)); d != 0 {
			l.mergeInto(sv, d, c)
		} else {
			l.attach(dst, c)
		}
		c = next
	}
	if t := l.nodes[src].tmpl; t != 0 {
		l.nodes[src].tmpl = 0
		if kept := l.nodes[dst].tmpl; kept == 0 {
			l.nodes[dst].tmpl, l.tmpls[t].node = t, dst
		} else {
			if seen := l.lastSeen.at(t).Load(); seen > l.lastSeen.at(kept).Load() {
				l.lastSeen.at(kept).Store(seen)
			}
			l.tmpls[t].dead, l.tmpls[t].node = true, 0
			sv.count--
			l.held--
		}
	}
	l.freeNode(src)
	if !l.nodes[dst].merged && (srcMerged || int(l.nodes[dst].nChildren) > l.maxChildren) {
		l.merge(sv, dst)
	}
}

// evict removes templates of sv, oldest learned first, until it holds maxTemplates and all
// services maxTotal; keep (the template just learned) stays. A template seen since it was queued gets a second
// chance at the back of the queue, once per pass.
func (l *learner) evict(sv *service, keep int32) {
	passes := len(sv.order) - sv.head
	for (sv.count > l.maxTemplates || l.held > l.maxTotal) && sv.count > 1 && sv.head < len(sv.order) {
		t := sv.order[sv.head]
		sv.order[sv.head] = 0
		sv.head++
		switch seen := l.lastSeen.at(t).Load(); {
		case l.tmpls[t].dead:
			l.freeTemplate(t)
		case t == keep || passes > 0 && seen > l.tmpls[t].queued:
			l.tmpls[t].queued = seen
			sv.order = append(sv.order, t)
		default:
			l.remove(sv, t)
			l.freeTemplate(t)
		}
		passes--
	}
	l.compact(sv)
}

// remove forgets t, and the nodes that held nothing but it. t stays listed in sv.order, dead,
// until compact or evict drops it.
func (l *learner) remove(sv *service, t int32) {
	n := l.tmpls[t].node
	l.tmpls[t].dead, l.tmpls[t].node = true, 0
	l.nodes[n].tmpl = 0
	sv.count--
	l.held--
	for n != sv.root && l.nodes[n].tmpl == 0 && l.nodes[n].nChildren == 0 {
		p := l.nodes[n].parent
		l.detach(n)
		l.freeNode(n)
		n = p
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
		if l.tmpls[t].dead {
			l.freeTemplate(t)
		} else {
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
			if !l.tmpls[t].dead && now-l.lastSeen.at(t).Load() > l.expiration {
				l.remove(sv, t)
			}
		}
		l.compact(sv)
		if sv.count == 0 {
			for _, t := range sv.order[sv.head:] {
				l.freeTemplate(t) // dead, all of them
			}
			l.freeSubtree(sv.root) // only the root is left: remove took the nodes that held nothing
			delete(l.services, name)
			l.servicesDiff = true
		}
	}
}

// freeSubtree frees n, detached, and every node below it.
func (l *learner) freeSubtree(n int32) {
	for c := l.takeChildren(n); c != 0; {
		next := l.nodes[c].next
		l.freeSubtree(c)
		c = next
	}
	l.freeNode(n)
}

// newNode returns a free node, detached and without an edge.
func (l *learner) newNode() int32 {
	n := slabTake(&l.nodes, &l.freeNodes)
	l.nodes[n] = node{used: true}
	return n
}

// slabTake returns an entry of slab from free, or a new one at its end.
func slabTake[T any](slab *[]T, free *[]int32) int32 {
	if k := len(*free); k > 0 {
		i := (*free)[k-1]
		*free = (*free)[:k-1]
		return i
	}
	var zero T
	*slab = append(*slab, zero)
	return int32(len(*slab) - 1)
}

// freeNode returns n, detached and without children, to the free list.
func (l *learner) freeNode(n int32) {
	l.edgesLive -= int(l.nodes[n].edgeLen)
	l.nodes[n] = node{}
	l.freeNodes = append(l.freeNodes, n)
}

func (l *learner) newTemplate(n int32, now int64) int32 {
	t := slabTake(&l.tmpls, &l.freeTmpls)
	l.lastSeen.grow(len(l.tmpls))
	l.tmpls[t] = template{node: n, queued: now}
	l.lastSeen.at(t).Store(now)
	return t
}

// freeTemplate returns t, dead and listed in no order, to the free list. A producer holding a
// snapshot older than the one without t may still stamp the slot, seen by whichever template
// takes it next: that can only delay that template's eviction or expiry by one stamp, never
// change a name.
func (l *learner) freeTemplate(t int32) {
	l.tmpls[t] = template{}
	l.freeTmpls = append(l.freeTmpls, t)
}

// attach makes c, detached, a child of p.
func (l *learner) attach(p, c int32) {
	nc, np := &l.nodes[c], &l.nodes[p]
	nc.parent, nc.prev, nc.next = p, 0, np.first
	if np.first != 0 {
		l.nodes[np.first].prev = c
	}
	np.first = c
	np.nChildren++
	l.children.insert(l, c)
}

// detach takes n out of its parent's children.
func (l *learner) detach(n int32) {
	l.children.remove(l, n)
	nd := &l.nodes[n]
	if nd.prev != 0 {
		l.nodes[nd.prev].next = nd.next
	} else {
		l.nodes[nd.parent].first = nd.next
	}
	if nd.next != 0 {
		l.nodes[nd.next].prev = nd.prev
	}
	l.nodes[nd.parent].nChildren--
	nd.parent, nd.prev, nd.next = 0, 0, 0
}

// takeChildren detaches every child of n and returns the first; they stay linked by next.
func (l *learner) takeChildren(n int32) int32 {
	for c := l.nodes[n].first; c != 0; c = l.nodes[c].next {
		l.children.remove(l, c)
	}
	first := l.nodes[n].first
	l.nodes[n].first, l.nodes[n].nChildren = 0, 0
	return first
}

// child returns p's child with edge e, 0 if none.
func (l *learner) child(p int32, e []byte) int32 { return l.children.find(l, p, e) }

// compactEdges rewrites the edge arena without the edges of freed and renamed nodes, once
// they take more than the live ones.
func (l *learner) compactEdges() {
	if len(l.edges) <= 2*l.edgesLive+4096 {
		return
	}
	edges := make([]byte, 0, 2*l.edgesLive)
	for i := range l.nodes {
		nd := &l.nodes[i]
		if !nd.used {
			continue
		}
		off := len(edges)
		edges = append(edges, l.edges[nd.edgeOff:nd.edgeOff+nd.edgeLen]...)
		nd.edgeOff = uint32(off)
	}
	l.edges = edges
}

// childIndex finds a node's child by its edge: an open-addressing table with linear probing
// of the children of every node, keyed by (parent, edge).
type childIndex struct {
	seed  maphash.Seed
	slots []childSlot // power of two, at most half full; nil until the first insert
	n     int
}

type childSlot struct {
	hash uint32 // low bits of the key's hash
	node int32  // 0: empty
}

func (x *childIndex) hash(parent int32, edge []byte) uint64 {
	h := maphash.Bytes(x.seed, edge) ^ uint64(parent)*0x9e3779b97f4a7c15
	return h ^ h>>29
}

func (x *childIndex) find(l *learner, parent int32, edge []byte) int32 {
	if x.slots == nil {
		return 0
	}
	h := x.hash(parent, edge)
	mask := uint64(len(x.slots) - 1)
	for i := h & mask; x.slots[i].node != 0; i = (i + 1) & mask {
		if s := x.slots[i]; s.hash == uint32(h) && l.nodes[s.node].parent == parent && bytes.Equal(l.edge(s.node), edge) {
			return s.node
		}
	}
	return 0
}

// insert adds n under its parent and edge, which no other child of that parent has.
func (x *childIndex) insert(l *learner, n int32) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow()
	}
	h := x.hash(l.nodes[n].parent, l.edge(n))
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].node != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = childSlot{hash: uint32(h), node: n}
	x.n++
}

// remove takes n out, keeping every other key reachable from its home slot (backward shift).
func (x *childIndex) remove(l *learner, n int32) {
	h := x.hash(l.nodes[n].parent, l.edge(n))
	mask := uint64(len(x.slots) - 1)
	i := h & mask
	for x.slots[i].node != n {
		i = (i + 1) & mask
	}
	x.slots[i] = childSlot{}
	x.n--
	for j := (i + 1) & mask; x.slots[j].node != 0; j = (j + 1) & mask {
		home := uint64(x.slots[j].hash) & mask
		// The entry at j may move to the hole at i if its home is not in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			x.slots[i], x.slots[j] = x.slots[j], childSlot{}
			i = j
		}
	}
}

func (x *childIndex) grow() {
	old := x.slots
	x.slots = make([]childSlot, max(64, 2*len(old)))
	mask := uint64(len(x.slots) - 1)
	for _, s := range old {
		if s.node == 0 {
			continue
		}
		i := uint64(s.hash) & mask
		for x.slots[i].node != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}

// seenStore holds each template's lastSeen (unix seconds) in chunks that never move, so
// producers stamp them while the learner adds more: the directory of chunks is replaced, not
// changed, when it grows.
type seenStore struct {
	dir atomic.Pointer[[]*seenChunk]
}

const seenChunkLen = 1024

type seenChunk [seenChunkLen]atomic.Int64

func newSeenStore() *seenStore {
	s := &seenStore{}
	s.dir.Store(&[]*seenChunk{})
	return s
}

func (s *seenStore) at(t int32) *atomic.Int64 {
	return &(*s.dir.Load())[t/seenChunkLen][t%seenChunkLen]
}

// grow makes room for templates [0, n). Learner only.
func (s *seenStore) grow(n int) {
	dir := *s.dir.Load()
	if len(dir)*seenChunkLen >= n {
		return
	}
	next := append(make([]*seenChunk, 0, len(dir)+1), dir...)
	next = append(next, new(seenChunk))
	s.dir.Store(&next)
}
