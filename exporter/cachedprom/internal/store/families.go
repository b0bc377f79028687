package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

// FamilyType is the Prometheus type of a metric family.
type FamilyType uint8

const (
	TypeGauge FamilyType = iota
	TypeUntyped
	TypeCounter
	TypeHistogram
	TypeSummary
)

// family is one Prometheus metric family. name, help and typ never change,
// and a family id is never reused, so the renderer can hold an id across
// lock releases.
type family struct {
	name string
	help string
	typ  FamilyType
	rows []uint32 // its series, in no particular order
	dead bool     // emptied and forgotten by name
}

// families holds the metric families by id and finds the live ones by name.
type families struct {
	list   []family
	byName map[string]uint32
}

func newFamilies() families { return families{byName: map[string]uint32{}} }

// find returns the live family named name.
func (fs *families) find(name string) (uint32, bool) {
	id, ok := fs.byName[name]
	return id, ok
}

// add creates a family; its name must not be taken.
func (fs *families) add(name, help string, typ FamilyType) uint32 {
	id := uint32(len(fs.list))
	fs.list = append(fs.list, family{name: name, help: help, typ: typ})
	fs.byName[name] = id
	return id
}

// at returns family id.
func (fs *families) at(id uint32) *family { return &fs.list[id] }

// addRow adds row id to family fam and returns its position there.
func (fs *families) addRow(fam, id uint32) uint32 {
	f := &fs.list[fam]
	f.rows = append(f.rows, id)
	return uint32(len(f.rows) - 1)
}

// removeRow takes the row at position pos out of family fam, moving the
// family's last row there, and returns that row's id. The family is
// forgotten once empty; its id is not reused, so a render holding it simply
// finds it empty.
func (fs *families) removeRow(fam, pos uint32) (moved uint32) {
	f := &fs.list[fam]
	last := len(f.rows) - 1
	moved = f.rows[last]
	f.rows[pos] = moved
	f.rows = f.rows[:last]
	if len(f.rows) == 0 {
		f.dead, f.rows = true, nil
		delete(fs.byName, f.name)
	}
	return moved
}

// reset forgets every family; ids stay unused.
func (fs *families) reset() {
	for i := range fs.list {
		fs.list[i].rows, fs.list[i].dead = nil, true
	}
	clear(fs.byName)
}
