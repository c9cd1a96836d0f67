package main

import (
	"fmt"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// writeSweepPlot writes the sweep's plot to path as SVG.
func writeSweepPlot(path string, rs []result) error {
	c := vgsvg.New(16*vg.Centimeter, 27*vg.Centimeter)
	if err := drawSweep(draw.New(c), rs); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// drawSweep draws three panels stacked on dc, rate on every x axis: CPU time,
// peak memory, and the p99 completion latency next to the model's.
func drawSweep(dc draw.Canvas, rs []result) error {
	if len(rs) == 0 {
		return fmt.Errorf("plot: no runs to draw")
	}
	series := func(y func(result) float64) plotter.XYs {
		xys := make(plotter.XYs, len(rs))
		for i, r := range rs {
			xys[i].X, xys[i].Y = r.TargetRate, y(r)
		}
		return xys
	}
	// The swept rates are the x ticks, on a log scale: sweeps span decades.
	ticks := make([]plot.Tick, len(rs))
	lo, hi := rs[0].TargetRate, rs[0].TargetRate
	for i, r := range rs {
		ticks[i] = plot.Tick{Value: r.TargetRate, Label: rateLabel(r.TargetRate)}
		lo, hi = min(lo, r.TargetRate), max(hi, r.TargetRate)
	}
	panel := func(title, unit string, fromZero bool, lines ...any) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = "target rate (requests/s, log scale)"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Label.Text = unit
		p.Legend.Top, p.Legend.Left = true, true
		p.Add(plotter.NewGrid())
		if err := plotutil.AddLinePoints(p, lines...); err != nil {
			return nil, fmt.Errorf("plot %q: %w", title, err)
		}
		p.X.Min, p.X.Max = lo/1.15, hi*1.15
		if fromZero {
			p.Y.Min = 0 // absolute amounts: keep small differences small
		}
		// Headroom above the data for the legend, which sits top left.
		span := max(p.Y.Max-p.Y.Min, 1e-9)
		p.Y.Min = max(p.Y.Min-0.1*span, min(p.Y.Min, 0))
		p.Y.Max += 0.35 * span
		return p, nil
	}

	cpu, err := panel("CPU time, user + sys", "s", true,
		"cpu", series(func(r result) float64 { return r.CPUMS / 1000 }))
	if err != nil {
		return err
	}
	mem, err := panel("Peak memory", "MiB", true,
		"peak RSS", series(func(r result) float64 { return max(r.PeakRSSMiB, 0) }),
		"peak heap in use", series(func(r result) float64 { return r.PeakHeapMiB }))
	if err != nil {
		return err
	}
	lat, err := panel("Completion latency p99, arrival to OnComplete", "ms", false,
		"measured", series(func(r result) float64 { return r.Latency.P99MS }),
		"model", series(func(r result) float64 { return r.ModelLatency.P99MS }))
	if err != nil {
		return err
	}

	tiles := draw.Tiles{
		Rows: 3, Cols: 1,
		PadTop: vg.Millimeter * 3, PadBottom: vg.Millimeter * 3,
		PadLeft: vg.Millimeter * 3, PadRight: vg.Millimeter * 5,
		PadY: vg.Millimeter * 8,
	}
	plots := [][]*plot.Plot{{cpu}, {mem}, {lat}}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}

	return nil
}

// rateLabel writes a rate compactly: 10k, 1.5M.
func rateLabel(r float64) string {
	switch {
	case r >= 1e6:
		return strconv.FormatFloat(r/1e6, 'g', 4, 64) + "M"
	case r >= 1e3:
		return strconv.FormatFloat(r/1e3, 'g', 4, 64) + "k"
	}
	return strconv.FormatFloat(r, 'g', 4, 64)
}
