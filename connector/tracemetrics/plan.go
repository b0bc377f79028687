package tracemetrics // import "github.com/otelcol-red/otelcol-red/connector/tracemetrics"

import "slices"

// A family is a set of series sharing one attribute layout: the span family (calls and
// duration together, the usual case), or calls and duration apart when calls_dimensions or
// histogram.dimensions differ, and the events family. Each family has its own series table.
type family struct {
	index    uint8
	calls    bool // its count is emitted as the calls sum
	duration bool // it observes span durations
	events   bool // keyed and counted per span event
	dims     []dimension
}

type dimension struct {
	name   string
	hasDef bool
	defEnc []byte // encoded default value
}

const maxFamilies = 3

// layout is the part of the configuration that decides the attributes of a series.
type layout struct {
	withService, withName, withKind, withStatus bool
	otelStatusCode                              bool
	instanceID                                  string // "" unless the collector.instance.id gate is on
	scopes                                      []string
	families                                    []*family
	callsFamily, durationFamily, eventsFamily   int // -1 when absent
}

func newLayout(cfg *Config, g gates, instanceID string) *layout {
	l := &layout{
		withService:    !slices.Contains(cfg.ExcludeDimensions, serviceNameKey),
		withName:       !slices.Contains(cfg.ExcludeDimensions, spanNameKey),
		withKind:       !slices.Contains(cfg.ExcludeDimensions, spanKindKey),
		otelStatusCode: g.useOtelStatusCode,
		scopes:         cfg.IncludeInstrumentationScope,
		callsFamily:    -1, durationFamily: -1, eventsFamily: -1,
	}
	if g.useOtelStatusCode {
		l.withStatus = !slices.Contains(cfg.ExcludeDimensions, otelStatusCodeKey)
	} else {
		l.withStatus = !slices.Contains(cfg.ExcludeDimensions, statusCodeKey)
	}
	if g.includeCollectorInstanceID && !slices.Contains(cfg.ExcludeDimensions, collectorInstanceKey) {
		l.instanceID = instanceID
	}
	add := func(f *family) int {
		f.index = uint8(len(l.families))
		l.families = append(l.families, f)
		return int(f.index)
	}
	withDuration := !cfg.Histogram.Disable
	if withDuration && (len(cfg.CallsDimensions) > 0 || len(cfg.Histogram.Dimensions) > 0) {
		l.callsFamily = add(&family{calls: true, dims: newDimensions(cfg.Dimensions, cfg.CallsDimensions)})
		l.durationFamily = add(&family{duration: true, dims: newDimensions(cfg.Dimensions, cfg.Histogram.Dimensions)})
	} else {
		l.callsFamily = add(&family{calls: true, duration: withDuration, dims: newDimensions(cfg.Dimensions, cfg.CallsDimensions)})
		if withDuration {
			l.durationFamily = l.callsFamily
		}
	}
	if cfg.Events.Enabled {
		l.eventsFamily = add(&family{calls: true, events: true, dims: newDimensions(cfg.Dimensions, cfg.Events.Dimensions)})
	}
	return l
}

func newDimensions(lists ...[]Dimension) []dimension {
	var dims []dimension
	for _, list := range lists {
		for _, d := range list {
			dim := dimension{name: d.Name}
			if d.Default != nil {
				dim.hasDef = true
				dim.defEnc = appendStrValue(nil, *d.Default)
			}
			dims = append(dims, dim)
		}
	}
	return dims
}

// spanFamilies returns the families keyed once per span.
func (l *layout) spanFamilies() []*family {
	var out []*family
	for _, f := range l.families {
		if !f.events {
			out = append(out, f)
		}
	}
	return out
}
