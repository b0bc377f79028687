package store // import "github.com/otelcol-red/otelcol-red/exporter/cachedprom/internal/store"

// Event is a reason a data point was changed or not taken, counted for the
// exporter's own telemetry.
type Event uint8

const (
	EventOverflow      Event = iota // folded into the family's overflow series
	EventMerged                     // added to a series another OTLP series also writes
	EventRepairedUTF8               // label value with invalid UTF-8, replaced
	EventJoinedLabels               // labels equal after sanitizing, values joined with ';'
	EventShadowedConst              // const label yielding to the series' own label
	EventOutOfOrder                 // delta overlapping the previous one, or older point: dropped
	EventRefusedName                // name the translator refuses: dropped
	EventRefusedType                // family exists with another type: dropped
	EventRefusedLabel               // invalid label name: dropped
	EventUnsupported                // delta up-down counter, unspecified temporality, huge histogram: dropped
	NumEvents
)

// eventNames are the reason attribute values of own telemetry.
var eventNames = [NumEvents]string{
	"overflow", "merged", "invalid_utf8", "colliding_labels", "shadowed_const_label",
	"out_of_order", "invalid_name", "type_conflict", "invalid_label_name", "unsupported",
}

// String is the event's reason attribute value.
func (e Event) String() string { return eventNames[e] }

// Dropped reports whether the point was not stored; the other events store
// it differently from its OTLP form, losing nothing.
func (e Event) Dropped() bool { return e >= EventOutOfOrder }

// Events counts events by kind.
type Events [NumEvents]int64
