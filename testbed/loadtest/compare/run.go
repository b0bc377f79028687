package compare

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

// Run runs sc on both collectors at once and returns what each did. An error means the run could
// not be measured (a collector did not start or crashed); lost spans are a result, not an error.
func Run(ctx context.Context, sc Scenario, pool *harness.Pool, o Options) (*Result, error) {
	ours, stock := o.Ours, o.Stock
	if sc.Transport == TransportKafka {
		ours, stock = o.OursKafka, o.StockKafka
	}
	res := &Result{Scenario: sc, Start: time.Now().UTC(), LoadAverage: harness.LoadAverage()}
	res.Ours = Side{Name: ours.Name, Binary: ours.Binary, Config: ours.Config}
	res.Stock = Side{Name: stock.Name, Binary: stock.Binary, Config: stock.Config}
	sides := []*side{{c: ours, out: &res.Ours}, {c: stock, out: &res.Stock}}

	scraper := harness.NewScraper(o.ScrapeInterval)
	defer scraper.Close()

	var err error
	switch sc.Transport {
	case TransportOTLP:
		err = runOTLP(ctx, sc, pool, o, sides, scraper, res)
	case TransportKafka:
		err = runKafka(ctx, sc, pool, o, sides, scraper, res)
	default:
		err = fmt.Errorf("unknown transport %q", sc.Transport)
	}
	for _, s := range sides {
		if s.proc == nil {
			continue
		}
		if stopErr := s.proc.Stop(); stopErr != nil {
			s.out.Error = harness.JoinErr(s.out.Error, stopErr.Error())
			err = errors.Join(err, stopErr)
		}
	}
	return res, err
}
