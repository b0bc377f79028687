package compare

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/otelcol-red/otelcol-red/testbed/loadtest/harness"
)

const (
	chartWidth  = 8 * vg.Inch
	chartHeight = 3.5 * vg.Inch
)

// ChartFiles names the charts WriteCharts makes for a result, relative to the results folder.
func ChartFiles(r *Result) (cpu, rss, rate string) {
	return r.Scenario.Name + "-cpu.png", r.Scenario.Name + "-rss.png", r.Scenario.Name + "-rate.png"
}

// legendHeadroom scales the y axis above the highest value so that the legend does not hide data.
const legendHeadroom = 1.25

// ThroughputChart is the bar chart of sustained spans/s across scenarios.
const ThroughputChart = "throughput.png"

// WriteCharts draws, into dir, CPU, RSS and throughput over time for every result and one bar
// chart of the sustained throughput of every scenario.
func WriteCharts(dir string, results []*Result) error {
	for _, r := range results {
		cpu, rss, rate := ChartFiles(r)
		err := timeChart(filepath.Join(dir, rate), r.Scenario.Title()+": throughput", "spans/s", r,
			func(s harness.Sample) float64 { return s.SpansPerSec })
		if err != nil {
			return err
		}
		err = timeChart(filepath.Join(dir, cpu), r.Scenario.Title()+": CPU", "CPU % (200 = 2 cores)", r,
			func(s harness.Sample) float64 { return s.CPUPercent })
		if err != nil {
			return err
		}
		err = timeChart(filepath.Join(dir, rss), r.Scenario.Title()+": RSS", "RSS (MiB)", r,
			func(s harness.Sample) float64 { return s.RSSMiB })
		if err != nil {
			return err
		}
	}
	return throughputChart(filepath.Join(dir, ThroughputChart), results)
}

func timeChart(path, title, yLabel string, r *Result, value func(harness.Sample) float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since load start"
	p.Y.Label.Text = yLabel
	p.Y.Min = 0
	p.Legend.Top = true
	var top float64
	for i, side := range []Side{r.Ours, r.Stock} {
		pts := make(plotter.XYs, len(side.Samples))
		for k, s := range side.Samples {
			pts[k].X = s.At
			pts[k].Y = value(s)
			top = max(top, pts[k].Y)
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("cannot draw %s: %w", path, err)
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(side.Name, line)
	}
	// Headroom above the highest point keeps the legend off the lines.
	p.Y.Max = max(top*legendHeadroom, 1)
	p.Add(plotter.NewGrid())
	if err := p.Save(chartWidth, chartHeight, path); err != nil {
		return fmt.Errorf("cannot save %s: %w", path, err)
	}
	return nil
}

func throughputChart(path string, results []*Result) error {
	p := plot.New()
	p.Title.Text = "Sustained throughput per scenario"
	p.Y.Label.Text = "spans/s"
	p.Legend.Top = true
	names := make([]string, len(results))
	ours := make(plotter.Values, len(results))
	stock := make(plotter.Values, len(results))
	for i, r := range results {
		names[i] = r.Scenario.Name
		ours[i] = r.Ours.SpansPerSec
		stock[i] = r.Stock.SpansPerSec
		p.Y.Max = max(p.Y.Max, ours[i]*legendHeadroom, stock[i]*legendHeadroom)
	}
	width := vg.Points(14)
	for i, vals := range []plotter.Values{ours, stock} {
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return fmt.Errorf("cannot draw %s: %w", path, err)
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(2*i-1) * width / 2
		p.Add(bars)
		p.Legend.Add([]string{"ours", "stock"}[i], bars)
	}
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	if err := p.Save(chartWidth+2*vg.Inch, chartHeight+vg.Inch, path); err != nil {
		return fmt.Errorf("cannot save %s: %w", path, err)
	}
	return nil
}
