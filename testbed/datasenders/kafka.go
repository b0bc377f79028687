// Package datasenders holds the testbed's load generators that have no stock
// equivalent. kafka.go writes OTLP-proto encoded traces to a Kafka topic with franz-go, the way an
// agent's kafka exporter (encoding otlp_proto) does, so a collector's kafka receiver can be
// loaded and measured.
package datasenders // import "github.com/otelcol-red/otelcol-red/testbed/datasenders"

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// KafkaProducer writes traces, one OTLP-proto message per ptrace.Traces, to one topic.
// Records have no key and are spread round-robin over the topic's partitions, so every member
// of a consumer group gets a share even at low rates (franz-go's default sticky partitioner would
// keep filling one partition for a whole batch).
//
// It talks to loopback brokers only: load runs measure this machine and must never reach out.
type KafkaProducer struct {
	client    *kgo.Client
	topic     string
	marshaler ptrace.ProtoMarshaler
}

// NewKafkaProducer connects to brokers (host:port on a loopback address) for topic. Extra
// franz-go options are applied last, so they override the defaults chosen here.
//
// Defaults: acks from all in-sync replicas with idempotent writes (franz-go's defaults), so a
// broker restart makes the producer retry without writing a record twice; no compression, as the
// contrib kafka exporter's default; 5 ms linger to batch records without adding visible latency;
// unlimited retries, so a record is only lost when its context ends.
func NewKafkaProducer(brokers []string, topic string, opts ...kgo.Opt) (*KafkaProducer, error) {
	if topic == "" {
		return nil, errors.New("kafka producer: topic is empty")
	}
	if len(brokers) == 0 {
		return nil, errors.New("kafka producer: no brokers")
	}
	for _, b := range brokers {
		if err := checkLoopback(b); err != nil {
			return nil, err
		}
	}
	all := append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5 * time.Millisecond),
	}, opts...)
	client, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	return &KafkaProducer{client: client, topic: topic}, nil
}

func checkLoopback(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("kafka producer: cannot parse broker %q: %w", hostport, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("kafka producer: broker %q is not a loopback address", hostport)
}

// Topic returns the topic the producer writes to.
func (p *KafkaProducer) Topic() string { return p.topic }

// SendTraces writes td as one message and waits until the broker acknowledged it.
func (p *KafkaProducer) SendTraces(ctx context.Context, td ptrace.Traces) error {
	b, err := p.marshaler.MarshalTraces(td)
	if err != nil {
		return fmt.Errorf("kafka producer: cannot marshal traces: %w", err)
	}
	return p.SendRaw(ctx, b)
}

// SendRaw writes value as one message as it is and waits for the acknowledgement; tests use it
// to put malformed messages on the topic.
func (p *KafkaProducer) SendRaw(ctx context.Context, value []byte) error {
	return p.client.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr()
}

// ProduceTraces writes td as one message without waiting; done (optional) is called with the
// outcome once the broker answered or the record failed for good. Call Flush to wait for all.
func (p *KafkaProducer) ProduceTraces(ctx context.Context, td ptrace.Traces, done func(error)) error {
	b, err := p.marshaler.MarshalTraces(td)
	if err != nil {
		return fmt.Errorf("kafka producer: cannot marshal traces: %w", err)
	}
	p.client.Produce(ctx, &kgo.Record{Value: b}, func(_ *kgo.Record, err error) {
		if done != nil {
			done(err)
		}
	})
	return nil
}

// Flush waits until every buffered message is acknowledged or has failed.
func (p *KafkaProducer) Flush(ctx context.Context) error { return p.client.Flush(ctx) }

// Close flushes nothing: call Flush first when buffered messages matter.
func (p *KafkaProducer) Close() { p.client.Close() }

// SpanShape says what generated spans look like. Span i (counted from 0 over a whole run)
// belongs to service "svc-<i mod Services>", is named "op-<(i / Services) mod SpanNames>", and has
// status Error when ErrorEvery > 0 and i mod ErrorEvery == ErrorEvery-1, Unset otherwise. The
// number of RED series is Services × SpanNames × (1 or 2 status codes).
//
// The trace id carries RunID in its first 8 bytes and i+1 in its last 8 (an all-zero id is
// invalid), the span id carries i+1 too, so a consumer can tell which spans of which run it saw
// (and which it saw twice).
type SpanShape struct {
	// Services is the number of distinct service.name values; 0 means 10.
	Services int
	// SpanNames is the number of distinct span names per service; 0 means 10.
	SpanNames int
	// ErrorEvery makes every ErrorEvery-th span an error; 0 means no errors.
	ErrorEvery int
	// RunID tags the trace ids of this run; 0 is a valid tag.
	RunID uint64
}

func (s SpanShape) services() int {
	if s.Services <= 0 {
		return 10
	}
	return s.Services
}

func (s SpanShape) spanNames() int {
	if s.SpanNames <= 0 {
		return 10
	}
	return s.SpanNames
}

// Service returns the service.name of span i.
func (s SpanShape) Service(i int64) string {
	return "svc-" + strconv.FormatInt(i%int64(s.services()), 10)
}

// IsError tells whether span i has status Error.
func (s SpanShape) IsError(i int64) bool {
	return s.ErrorEvery > 0 && i%int64(s.ErrorEvery) == int64(s.ErrorEvery-1)
}

// Traces builds spans first, first+1, …, first+n-1, grouped into one ResourceSpans per service.
func (s SpanShape) Traces(first int64, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	byService := make(map[string]ptrace.SpanSlice, s.services())
	now := time.Now()
	for k := 0; k < n; k++ {
		i := first + int64(k)
		svc := s.Service(i)
		spans, ok := byService[svc]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", svc)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("otelcol-red/testbed")
			spans = ss.Spans()
			byService[svc] = spans
		}
		sp := spans.AppendEmpty()
		var tid [16]byte
		binary.BigEndian.PutUint64(tid[:8], s.RunID)
		binary.BigEndian.PutUint64(tid[8:], uint64(i)+1)
		sp.SetTraceID(tid)
		var sid [8]byte
		binary.BigEndian.PutUint64(sid[:], uint64(i)+1) // an all-zero span id is invalid
		sp.SetSpanID(sid)
		sp.SetName("op-" + strconv.FormatInt((i/int64(s.services()))%int64(s.spanNames()), 10))
		sp.SetKind(ptrace.SpanKindServer)
		// Durations spread over 1–100 ms so the duration histogram has more than one bucket.
		dur := time.Duration(1+i%100) * time.Millisecond
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now.Add(-dur)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now))
		if s.IsError(i) {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage("generated error")
		}
	}
	return td
}

// KafkaLoad is a bounded run of generated spans written to Kafka at a target rate.
type KafkaLoad struct {
	// Brokers are loopback host:port addresses, e.g. 127.0.0.1:19092.
	Brokers []string
	// Topic receives the messages.
	Topic string
	// SpansPerSecond is the target rate; 0 writes as fast as the broker acknowledges.
	SpansPerSecond int
	// SpansPerMessage is the number of spans in one message (one ptrace.Traces); 0 means 100.
	SpansPerMessage int
	// Duration bounds the run; it must be positive. The run also ends when MaxSpans is reached.
	Duration time.Duration
	// MaxSpans stops the run after that many spans; 0 means no limit but Duration.
	MaxSpans int64
	// Shape says what the spans look like.
	Shape SpanShape
	// MaxInFlight bounds the messages written but not yet acknowledged; 0 means 1000. A slow
	// broker then slows the run down instead of growing memory.
	MaxInFlight int
}

// KafkaLoadResult is what a run wrote. Spans counts acknowledged spans only, so a consumer that
// saw Spans spans lost none.
type KafkaLoadResult struct {
	Spans      int64
	ErrorSpans int64
	Messages   int64
	// Failed counts spans whose message the broker never acknowledged (the run ended first).
	Failed  int64
	Elapsed time.Duration
	// PerService counts acknowledged spans per service.name and status: key "svc-3/error" or
	// "svc-3/unset".
	PerService map[string]int64
}

// SpansPerSecond is the achieved rate.
func (r KafkaLoadResult) SpansPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Spans) / r.Elapsed.Seconds()
}

// RunKafkaLoad writes spans as load describes until Duration passes, MaxSpans spans are written
// or ctx ends, then waits for the outstanding acknowledgements. It returns an error only when the
// run could not start; spans lost on the way are in Failed.
func RunKafkaLoad(ctx context.Context, load KafkaLoad) (KafkaLoadResult, error) {
	if load.Duration <= 0 {
		return KafkaLoadResult{}, errors.New("kafka load: duration must be positive")
	}
	perMsg := load.SpansPerMessage
	if perMsg <= 0 {
		perMsg = 100
	}
	inFlight := load.MaxInFlight
	if inFlight <= 0 {
		inFlight = 1000
	}
	p, err := NewKafkaProducer(load.Brokers, load.Topic)
	if err != nil {
		return KafkaLoadResult{}, err
	}
	defer p.Close()

	runCtx, cancel := context.WithTimeout(ctx, load.Duration)
	defer cancel()

	var (
		mu     sync.Mutex
		res    = KafkaLoadResult{PerService: map[string]int64{}}
		failed atomic.Int64
		slots  = make(chan struct{}, inFlight)
	)
	start := time.Now()
	var next int64
	// Pacing: each round writes what the target rate allows by now, then sleeps a short tick.
	// Catching up by elapsed time (not by sleeping per message) keeps the average rate exact
	// even when the timer fires late on a loaded machine.
	const tick = 5 * time.Millisecond
loop:
	for {
		due := int64(-1) // no rate limit
		if load.SpansPerSecond > 0 {
			due = int64(time.Since(start).Seconds() * float64(load.SpansPerSecond))
		}
		for due < 0 || next < due {
			if load.MaxSpans > 0 && next >= load.MaxSpans {
				break loop
			}
			n := int64(perMsg)
			if load.MaxSpans > 0 && next+n > load.MaxSpans {
				n = load.MaxSpans - next
			}
			select {
			case slots <- struct{}{}:
			case <-runCtx.Done():
				break loop
			}
			first := next
			next += n
			td := load.Shape.Traces(first, int(n))
			perService := countByServiceStatus(td)
			// The record gets ctx, not runCtx: the end of the run must not fail records that
			// are already on their way.
			err := p.ProduceTraces(ctx, td, func(err error) {
				<-slots
				if err != nil {
					failed.Add(n)
					return
				}
				mu.Lock()
				res.Messages++
				res.Spans += n
				for k, v := range perService {
					res.PerService[k] += v
					if strings.HasSuffix(k, "/error") {
						res.ErrorSpans += v
					}
				}
				mu.Unlock()
			})
			if err != nil {
				<-slots
				failed.Add(n)
			}
			if due < 0 {
				select {
				case <-runCtx.Done():
					break loop
				default:
				}
			}
		}
		select {
		case <-runCtx.Done():
			break loop
		case <-time.After(tick):
		}
	}
	res.Elapsed = time.Since(start)
	// Outstanding records still get their answer: Flush waits for them, bounded by ctx.
	_ = p.Flush(ctx)
	mu.Lock()
	defer mu.Unlock()
	res.Failed = failed.Load()
	out := res
	out.PerService = make(map[string]int64, len(res.PerService))
	for k, v := range res.PerService {
		out.PerService[k] = v
	}
	return out, nil
}

// countByServiceStatus counts spans by "service/status" ("svc-1/error", "svc-1/unset", "svc-1/ok").
func countByServiceStatus(td ptrace.Traces) map[string]int64 {
	out := map[string]int64{}
	for _, rs := range td.ResourceSpans().All() {
		svc := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			svc = v.AsString()
		}
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				status := "unset"
				switch sp.Status().Code() {
				case ptrace.StatusCodeError:
					status = "error"
				case ptrace.StatusCodeOk:
					status = "ok"
				}
				out[svc+"/"+status]++
			}
		}
	}
	return out
}
