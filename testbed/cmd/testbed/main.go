// Command testbed runs the load scenarios on bin/otelcol-red and the stock twin side by side and
// writes results/RESULTS.md with PNG charts. It exits non-zero when a span is lost, a scenario
// cannot be measured, or ours sustains fewer spans/s than stock beyond the tolerance.
//
//	go run ./cmd/testbed            # full run (make testbed)
//	go run ./cmd/testbed -short     # CI: ~30 s per scenario, the 10k rates left out
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/datasenders"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/compare"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
	"github.com/otelcol-red/otelcol-red/testbed/loadtest/probes"
)

type flags struct {
	short           bool
	out             string
	oursBin         string
	stockBin        string
	oursConfig      string
	stockConfig     string
	oursKafka       string
	stockKafka      string
	run             string
	duration        time.Duration
	scrapeInterval  time.Duration
	flushInterval   time.Duration
	drainTimeout    time.Duration
	kafkaTimeout    time.Duration
	tolerance       float64
	concurrency     int
	spansPerRequest int
	kafkaBacklog    int64
	kafkaPartitions int
	kafkaScript     string
	kafkaBrokers    string
	callsMetric     string

	memory        bool
	rssCapMiB     int
	heapProfile   bool
	heapAtEnd     bool
	phase         time.Duration
	memoryWindow  time.Duration
	staleBacklog  int64
	floorConfig   string
	oursMemConfig string
	floorRounds   int
	memoryProcs   string
	sides         string

	scaling       bool
	procs         string
	scalingRounds int
	scaling1M     bool
	scalingSeries string
	cpuProfile    time.Duration

	graph             bool
	graphConfig       string
	stockGraphConfig  string
	graphRounds       int
	native            bool
	nativeScrapes     int
	oursNativeConfig  string
	stockNativeConfig string
}

func main() {
	var f flags
	flag.BoolVar(&f.short, "short", false, "CI mode: 30 s per scenario, the 10k rates left out, a smaller Kafka backlog")
	flag.StringVar(&f.out, "out", "results", "folder for RESULTS.md and the charts; raw data and logs go to <out>/raw")
	flag.StringVar(&f.oursBin, "ours-bin", "../bin/otelcol-red", "our collector binary")
	flag.StringVar(&f.stockBin, "stock-bin", "../bin/otelcol-stock", "the stock twin binary")
	flag.StringVar(&f.oursConfig, "ours-config", "../configs/default.yaml", "our config for the OTLP scenarios")
	flag.StringVar(&f.stockConfig, "stock-config", "../configs/stock-twin.yaml", "the stock config for the OTLP scenarios")
	flag.StringVar(&f.oursKafka, "ours-kafka-config", "configs/kafka-ours.yaml", "our config for the Kafka scenario")
	flag.StringVar(&f.stockKafka, "stock-kafka-config", "configs/kafka-stock.yaml", "the stock config for the Kafka scenario")
	flag.StringVar(&f.run, "run", "", "run only the scenarios whose name matches this regular expression")
	flag.DurationVar(&f.duration, "duration", 0, "load window per OTLP scenario (default 2m, 30s with -short)")
	flag.DurationVar(&f.scrapeInterval, "scrape-interval", 15*time.Second, "interval of the Prometheus-style scrapes")
	flag.DurationVar(&f.flushInterval, "flush-interval", 15*time.Second, "metrics flush interval given to both collectors (METRICS_FLUSH_INTERVAL)")
	flag.DurationVar(&f.drainTimeout, "drain-timeout", 5*time.Minute, "wait after the load for the calls counters to reach the spans sent")
	flag.DurationVar(&f.kafkaTimeout, "kafka-timeout", 5*time.Minute, "time a collector may take to consume the Kafka backlog")
	flag.Float64Var(&f.tolerance, "tolerance", 0.15, "fraction of stock's spans/s ours may fall below before the run fails (run-to-run noise on a shared machine)")
	flag.IntVar(&f.concurrency, "concurrency", 4, "requests in flight per collector")
	flag.IntVar(&f.spansPerRequest, "spans-per-request", 1000, "spans per OTLP request or Kafka message")
	flag.Int64Var(&f.kafkaBacklog, "kafka-backlog", 0, "spans written to the topic before the collectors start (default 10M, 4M with -short)")
	flag.IntVar(&f.kafkaPartitions, "kafka-partitions", 4, "partitions of the Kafka scenario's topic")
	flag.StringVar(&f.kafkaScript, "kafka-script", "../scripts/kafka.sh", "script that starts Kafka and creates topics")
	flag.StringVar(&f.kafkaBrokers, "kafka-brokers", "", "use this running broker instead of starting one with -kafka-script")
	flag.StringVar(&f.callsMetric, "calls-metric", harness.CallsMetric, "counter whose sum must equal the spans sent")
	flag.BoolVar(&f.memory, "memory", false, "run the memory and overload probes (make testbed-memory) instead of the comparison scenarios; writes <out>/MEMORY.md")
	flag.IntVar(&f.rssCapMiB, "rss-cap-mib", 10240, "probes kill a collector whose RSS passes this many MiB, and record it")
	flag.BoolVar(&f.heapProfile, "heap-profile", false, "probes: take a heap profile of ours after the second flush of the memory probe (-ours-memory-config must enable pprof)")
	flag.BoolVar(&f.heapAtEnd, "heap-profile-end", false, "probes: with -heap-profile, take it in the last second of the memory probe's load instead (every series created, several flushes done)")
	flag.DurationVar(&f.phase, "phase", 30*time.Second, "probes: length of each measured phase of the scrape-load and floor probes")
	flag.DurationVar(&f.memoryWindow, "memory-window", 0, "probes: load window of the million-series probe (default four flush intervals and 10 s)")
	flag.Int64Var(&f.staleBacklog, "stale-backlog", 20_000_000, "probes: spans in the Kafka backlog of the staleness probe")
	flag.StringVar(&f.floorConfig, "floor-config", "configs/floor.yaml", "probes: the decode-floor config (OTLP receiver → sampled debug exporter)")
	flag.StringVar(&f.oursMemConfig, "ours-memory-config", "configs/ours-memory.yaml", "probes: our config for the million-series probe (series caps lifted, pprof extension)")
	flag.StringVar(&f.memoryProcs, "memory-procs", "", "probes: run the million-series probe once per GOMAXPROCS value, comma-separated, each collector pinned to that many CPUs with 4 × N requests in flight (default: once, GOMAXPROCS=2, unpinned)")
	flag.StringVar(&f.sides, "sides", "", "probes and scaling: measure only these collectors, comma-separated (ours, stock, floor); probes left with none are not run")
	flag.IntVar(&f.floorRounds, "floor-rounds", probes.DefaultFloorRounds, "probes: rounds of the floor probe per shape, the floor and ours alternating; the report takes medians over them")
	flag.BoolVar(&f.scaling, "scaling", false, "run the scaling plan (make testbed-scaling) instead of the comparison scenarios: floor, ours and stock at each -procs; writes <out>/SCALING.md")
	flag.StringVar(&f.procs, "procs", "", "scaling: GOMAXPROCS values, comma-separated, each collector pinned to that many CPUs (default those of 1,2,4,8 that leave one CPU to the load generator)")
	flag.IntVar(&f.scalingRounds, "scaling-rounds", 1, "scaling: rounds per width and shape, the sides interleaved; the report takes medians over them")
	flag.StringVar(&f.scalingSeries, "scaling-series", "", "scaling: the shapes, comma-separated, of 1k, 100k and 1m series (default 1k,100k; -scaling-1m adds 1m)")
	flag.DurationVar(&f.cpuProfile, "cpu-profile", 0, "scaling, the floor and million-series probes: take a CPU profile this long (whole seconds) of every collector, from the start of its measured phase (at most -phase), or from the first flush of the million-series probe, into <out>/raw (the pprof extension is added to each config by an overlay)")
	flag.BoolVar(&f.scaling1M, "scaling-1m", false, "scaling: add the million-series shape at each width (memory-heavy: stock passes 20 GB; -rss-cap-mib caps it)")
	flag.BoolVar(&f.graph, "graph", false, "run the service graph scenario (make testbed-graph) instead of the comparison scenarios: our RED path, ours with tracegraph and stock with servicegraph on a call graph, one core each; writes <out>/GRAPH.md")
	flag.StringVar(&f.graphConfig, "graph-config", "../configs/tracegraph.yaml", "graph: our config with the service graph (the RED path alone is -ours-config)")
	flag.StringVar(&f.stockGraphConfig, "stock-graph-config", "configs/stock-graph.yaml", "graph: the stock config with spanmetrics and servicegraph")
	flag.IntVar(&f.graphRounds, "graph-rounds", 1, "graph: rounds per side, the order reversed on even rounds; the report takes medians over them")
	flag.BoolVar(&f.native, "native", false, "run the native histogram probe (make testbed-native) instead of the comparison scenarios: ours exponential, ours classic (-ours-config) and stock exponential at 100k series; writes <out>/NATIVE.md")
	flag.IntVar(&f.nativeScrapes, "native-scrapes", 5, "native: scrapes timed per side and format")
	flag.StringVar(&f.oursNativeConfig, "ours-native-config", "../configs/native-histograms.yaml", "native: our config with exponential histograms")
	flag.StringVar(&f.stockNativeConfig, "stock-native-config", "configs/native-stock.yaml", "native: the stock config with exponential histograms")
	flag.Parse()
	log.SetFlags(log.Ltime)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runner := run
	if f.memory {
		runner = runMemory
	}
	if f.scaling {
		runner = runScaling
	}
	if f.graph {
		runner = runGraph
	}
	if f.native {
		runner = runNative
	}
	failures, err := []string(nil), checkModeFlags(f)
	if err == nil {
		failures, err = runner(ctx, f)
	}
	if err != nil {
		log.Printf("testbed: %v", err)
		os.Exit(2)
	}
	if len(failures) > 0 {
		log.Printf("testbed: FAIL")
		for _, line := range failures {
			log.Printf("  %s", line)
		}
		os.Exit(1)
	}
	log.Printf("testbed: PASS")
}

// checkModeFlags refuses flags that the chosen mode would ignore: a CPU profile asked of a run
// that takes none, or shapes given to no scaling plan, would otherwise pass unnoticed.
func checkModeFlags(f flags) error {
	if f.cpuProfile != 0 && !f.scaling && !f.memory {
		return errors.New("-cpu-profile is read by -scaling and -memory only")
	}
	if f.scalingSeries != "" && !f.scaling {
		return errors.New("-scaling-series is read by -scaling only")
	}
	return nil
}

// selectPlan applies the mode defaults to f and returns the scenarios to run.
func selectPlan(f *flags) ([]compare.Scenario, string, error) {
	mode := "full"
	if f.duration == 0 {
		f.duration = 2 * time.Minute
		if f.short {
			f.duration = 30 * time.Second
		}
	}
	if f.kafkaBacklog == 0 {
		// Sized so that consumption lasts several seconds at the 0.5 to 1.1M spans/s measured
		// here, long against the 100 ms the consumption is read at.
		f.kafkaBacklog = 10_000_000
		if f.short {
			f.kafkaBacklog = 4_000_000
		}
	}
	plan := compare.FullPlan(f.kafkaBacklog)
	if f.short {
		mode = "short"
		plan = compare.ShortPlan(f.kafkaBacklog)
	}
	plan, err := selectByName(plan, f.run, func(s compare.Scenario) string { return s.Name })
	if err != nil {
		return nil, "", err
	}
	if len(plan) == 0 {
		return nil, "", errors.New("no scenario to run")
	}
	return plan, mode, nil
}

func run(ctx context.Context, f flags) ([]string, error) {
	plan, mode, err := selectPlan(&f)
	if err != nil {
		return nil, err
	}

	rawDir := filepath.Join(f.out, "raw")
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return nil, err
	}
	o := compare.Options{Options: f.options(rawDir)}
	o.Ours = harness.Collector{Name: "ours", Binary: f.oursBin, Config: f.oursConfig}
	o.Stock = harness.Collector{Name: "stock", Binary: f.stockBin, Config: f.stockConfig}
	o.OursKafka = harness.Collector{Name: "ours", Binary: f.oursBin, Config: f.oursKafka}
	o.StockKafka = harness.Collector{Name: "stock", Binary: f.stockBin, Config: f.stockKafka}
	o.Duration = f.duration
	if err := checkCollectors(o.Ours, o.Stock, o.OursKafka, o.StockKafka); err != nil {
		return nil, err
	}

	report := &compare.Report{
		Start: time.Now().UTC(), Machine: harness.ReadMachine(), Mode: mode, Duration: f.duration,
		Tolerance: f.tolerance, Concurrency: f.concurrency, SpansPerRequest: f.spansPerRequest,
		ScrapeInterval: f.scrapeInterval, FlushInterval: f.flushInterval,
	}
	pools := map[harness.Shape]*harness.Pool{}
	kafkaReady := false
	for _, sc := range plan {
		// The broker starts only when a Kafka scenario comes, so that it does not take CPU from the
		// OTLP scenarios before it.
		if sc.Transport == compare.TransportKafka && !kafkaReady {
			stopKafka, err := setUpKafka(ctx, f, &o.Kafka)
			defer stopKafka()
			if err != nil {
				report.Errors = append(report.Errors, fmt.Sprintf("%s: %v", sc.Name, err))
				log.Printf("%s: not measured: %v", sc.Name, err)
				continue
			}
			kafkaReady = true
		}
		pool, ok := pools[sc.Shape]
		if !ok {
			var err error
			if pool, err = harness.NewPool(sc.Shape, f.spansPerRequest, 1); err != nil {
				return nil, err
			}
			pools[sc.Shape] = pool
		}
		log.Printf("%s: %s", sc.Name, sc.Title())
		res, err := compare.Run(ctx, sc, pool, o)
		if err != nil {
			report.Errors = append(report.Errors, fmt.Sprintf("%s: %v", sc.Name, err))
			log.Printf("%s: not measured: %v", sc.Name, err)
		}
		if res != nil {
			report.Results = append(report.Results, res)
			log.Printf("%s: ours %.0f spans/s (lost %d), stock %.0f spans/s (lost %d)",
				sc.Name, res.Ours.SpansPerSec, res.Ours.Lost, res.Stock.SpansPerSec, res.Stock.Lost)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return report.Failures(), write(f.out, rawDir, report)
}

// selectByName keeps the items whose name matches the -run expression (all when it is empty).
func selectByName[T any](items []T, expr string, name func(T) string) ([]T, error) {
	if expr == "" {
		return items, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("cannot parse -run=%q: %w", expr, err)
	}
	var kept []T
	for _, it := range items {
		if re.MatchString(name(it)) {
			kept = append(kept, it)
		}
	}
	return kept, nil
}

// checkCollectors fails when a binary or config of cs is missing, before anything starts.
func checkCollectors(cs ...harness.Collector) error {
	for _, c := range cs {
		for _, path := range []string{c.Binary, c.Config} {
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("%s: %w (build with make build stock-twin)", c.Name, err)
			}
		}
	}
	return nil
}

// write saves RESULTS.md, the charts, and the raw samples as JSON.
func write(out, rawDir string, report *compare.Report) error {
	if err := writeMarkdown(filepath.Join(out, "RESULTS.md"), report.WriteMarkdown); err != nil {
		return err
	}
	if err := compare.WriteCharts(out, report.Results); err != nil {
		return err
	}
	return writeJSON(filepath.Join(rawDir, "run-"+report.Start.Format("20060102T150405Z")+".json"), report)
}

// writeMarkdown creates path and has render fill it.
func writeMarkdown(path string, render func(io.Writer) error) error {
	md, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := render(md); err != nil {
		md.Close()
		return err
	}
	return md.Close()
}

// writeJSON saves v, indented, at path.
func writeJSON(path string, v any) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	log.Printf("wrote %s", path)
	return os.WriteFile(path, raw, 0o644)
}

// setUpKafka finds the broker and wires topic creation and the producer into k. Without
// -kafka-brokers it starts one with the script (KAFKA_PORT, KAFKA_CONTROLLER_PORT and
// OTELCOL_RED_STATE in the environment select an instance of its own) and the returned func stops
// it again, unless it was already running: then it belongs to someone else.
func setUpKafka(ctx context.Context, f flags, k *harness.Kafka) (func(), error) {
	stop := func() {}
	brokers := f.kafkaBrokers
	if brokers == "" {
		wasRunning := exec.CommandContext(ctx, f.kafkaScript, "status").Run() == nil
		log.Printf("starting Kafka with %s", f.kafkaScript)
		out, err := exec.CommandContext(ctx, f.kafkaScript, "start").Output()
		if err != nil {
			return stop, fmt.Errorf("cannot start Kafka with %s: %w", f.kafkaScript, harness.ExitDetail(err))
		}
		brokers = strings.TrimSpace(string(out))
		if !wasRunning {
			stop = func() {
				if err := exec.Command(f.kafkaScript, "stop").Run(); err != nil {
					log.Printf("cannot stop Kafka: %v", err)
				}
			}
		}
	}
	k.Brokers = brokers
	k.Partitions = f.kafkaPartitions
	k.CreateTopic = func(ctx context.Context, topic string, partitions int) error {
		cmd := exec.CommandContext(ctx, f.kafkaScript, "create-topic", topic, fmt.Sprint(partitions))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	k.NewSink = func(pool *harness.Pool, brokers, topic string) (harness.Sink, error) {
		p, err := datasenders.NewKafkaProducer(strings.Split(brokers, ","), topic)
		if err != nil {
			return nil, err
		}
		return &kafkaSink{producer: p, pool: pool}, nil
	}
	return stop, nil
}

// kafkaSink writes the pool's pre-encoded requests as Kafka messages: an OTLP
// ExportTraceServiceRequest and the TracesData that the receiver's otlp_proto encoding expects
// share their wire format (field 1, repeated ResourceSpans).
type kafkaSink struct {
	producer *datasenders.KafkaProducer
	pool     *harness.Pool
}

func (k *kafkaSink) Send(ctx context.Context, i int) error {
	return k.producer.SendRaw(ctx, k.pool.Encoded[i])
}

func (k *kafkaSink) Close() error {
	k.producer.Close()
	return nil
}

// options are the settings every mode shares.
func (f flags) options(rawDir string) harness.Options {
	return harness.Options{
		ScrapeInterval: f.scrapeInterval,
		SampleInterval: time.Second,
		FlushInterval:  f.flushInterval,
		DrainTimeout:   f.drainTimeout,
		KafkaTimeout:   f.kafkaTimeout,
		Concurrency:    f.concurrency,
		CallsMetric:    f.callsMetric,
		RawDir:         rawDir,
	}
}

// probeOptions prepares a probe mode's run: <out>/raw created, the collectors' binaries and
// configs checked, the options with the RSS cap. It returns the options and the raw folder.
func (f flags) probeOptions(cs ...harness.Collector) (harness.Options, string, error) {
	rawDir := filepath.Join(f.out, "raw")
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return harness.Options{}, "", err
	}
	if err := checkCollectors(cs...); err != nil {
		return harness.Options{}, "", err
	}
	if f.cpuProfile != 0 && f.cpuProfile < time.Second {
		return harness.Options{}, "", fmt.Errorf("-cpu-profile must be 1s or more (or 0 for none), got %s", f.cpuProfile)
	}
	o := f.options(rawDir)
	o.RSSCap = uint64(f.rssCapMiB) << 20
	o.CPUProfile = f.cpuProfile
	return o, rawDir, nil
}
