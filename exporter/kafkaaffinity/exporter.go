package kafkaaffinity // import "github.com/otelcol-red/otelcol-red/exporter/kafkaaffinity"

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jonboulle/clockwork"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"
)

// affinityExporter writes each request as one record per key (per sub-key
// for a hot key) and returns only when Kafka acknowledged all of them, so the
// sending queue keeps a request until it is safe.
type affinityExporter struct {
	cfg       *Config
	logger    *zap.Logger
	telemetry *telemetry
	hot       *hotKeys
	marshal   func(ptrace.Traces) ([]byte, error)
	// clock times the hot-key intervals: real from the factory, fake in tests.
	clock clockwork.Clock

	// groupings are per call: the queue runs several consumers at once.
	groupings sync.Pool

	client   *kgo.Client
	stopTick chan struct{}
	tickDone sync.WaitGroup
	stopOnce sync.Once
}

func newExporter(cfg *Config, set exporter.Settings, clock clockwork.Clock) (*affinityExporter, error) {
	e := &affinityExporter{cfg: cfg, logger: set.Logger, hot: newHotKeys(cfg.HotKeys), clock: clock, stopTick: make(chan struct{})}
	switch cfg.Encoding {
	case encodingJSON:
		m := &ptrace.JSONMarshaler{}
		e.marshal = m.MarshalTraces
	default:
		m := &ptrace.ProtoMarshaler{}
		e.marshal = m.MarshalTraces
	}
	e.groupings.New = func() any { return newGrouping(cfg, e.hot) }
	t, err := newTelemetry(set.TelemetrySettings, e.hot)
	if err != nil {
		return nil, err
	}
	e.telemetry = t
	return e, nil
}

// Start builds the client; franz-go connects lazily, so a broker that is down
// at start only delays the first acknowledgement and the queue holds the data.
func (e *affinityExporter) Start(ctx context.Context, _ component.Host) error {
	c, err := newClient(ctx, e.cfg, e.logger)
	if err != nil {
		return err
	}
	e.client = c
	if e.cfg.HotKeys.SpansPerSecond > 0 {
		e.tickDone.Add(1)
		go e.tickLoop()
	}
	return nil
}

func (e *affinityExporter) tickLoop() {
	defer e.tickDone.Done()
	t := e.clock.NewTicker(e.cfg.HotKeys.Interval)
	defer t.Stop()
	last := e.clock.Now()
	for {
		select {
		case <-e.stopTick:
			return
		case now := <-t.Chan():
			e.hot.tick(now.Sub(last))
			last = now
		}
	}
}

// Shutdown runs after the sending queue drained (exporterhelper order), so
// nothing is left to flush: every request already returned.
func (e *affinityExporter) Shutdown(context.Context) error {
	e.stopOnce.Do(func() {
		close(e.stopTick)
		e.tickDone.Wait()
		if e.client != nil {
			e.client.Close()
		}
		e.telemetry.shutdown()
	})
	return nil
}

// ConsumeTraces groups the request by key, marshals one record per key and
// sub-key, and produces them all before returning.
func (e *affinityExporter) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	g := e.groupings.Get().(*grouping)
	defer func() {
		g.reset()
		e.groupings.Put(g)
	}()
	g.add(td)
	e.telemetry.recordKeying(ctx, g.fallbackSpans, g.cutKeys)

	var records []*kgo.Record
	var sent [numKeyClasses]struct{ records, spans int }
	for gi := range g.groups {
		grp := &g.groups[gi]
		class := classNormal
		switch {
		case g.traceBuckets > 0:
			class = classTraceID
		case len(grp.subs) > 1:
			class = classHot
		}
		for sub, t := range grp.subs {
			if t == (ptrace.Traces{}) {
				continue
			}
			value, err := e.marshal(t)
			if err != nil {
				return consumererror.NewPermanent(fmt.Errorf("cannot marshal traces for key %q: %w", grp.key, err))
			}
			r := &kgo.Record{Key: []byte(grp.key), Value: value}
			if len(grp.subs) > 1 {
				r.Context = &subRecordContext{Context: ctx, sub: sub}
			}
			sent[class].records++
			sent[class].spans += grp.spans[sub]
			records = append(records, r)
		}
	}
	if len(records) == 0 {
		return nil
	}
	if err := e.client.ProduceSync(ctx, records...).FirstErr(); err != nil {
		// A record too large for the broker never fits: retrying would block
		// the queue forever. Everything else (broker down, leader moved,
		// timeout) is retried whole; records already written then appear
		// twice, as with the stock exporter.
		if errors.Is(err, kerr.MessageTooLarge) {
			return consumererror.NewPermanent(err)
		}
		return err
	}
	for class, n := range sent {
		if n.records > 0 {
			e.telemetry.recordSent(ctx, keyClass(class), n.records, n.spans)
		}
	}
	return nil
}
