package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// writePlot writes four panels, direct beside proxy: CPU (the broker's in
// each phase, and the proxy's), fetches at the broker, latency p50 and p99,
// and the proxy's memory. A
// path ending in .png gets a PNG, any other an SVG.
func writePlot(path string, r result) error {
	w, h := 24*vg.Centimeter, 18*vg.Centimeter
	var c interface {
		vg.CanvasSizer
		WriteTo(io.Writer) (int64, error)
	}
	if strings.HasSuffix(path, ".png") {
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	} else {
		c = vgsvg.New(w, h)
	}
	if err := drawPanels(draw.New(c), r); err != nil {
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
	return f.Close()
}

func drawPanels(dc draw.Canvas, r result) error {
	panel := func(title, unit string, names []string, values ...float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = unit
		p.Y.Min = 0
		bars, err := plotter.NewBarChart(plotter.Values(values), vg.Points(30))
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(0)
		p.Add(bars)
		p.NominalX(names...)
		return p, nil
	}
	dp := []string{"direct", "proxy"}
	cpu, err := panel("CPU", "cores", []string{"broker, direct", "broker, proxied", "proxy"},
		r.Direct.BrokerCPUCores, r.Proxy.BrokerCPUCores, r.Proxy.ProxyCPUCores)
	if err != nil {
		return err
	}
	fetches, err := panel("fetch requests at the broker", "per second", dp, r.Direct.UpstreamFetchesPerSec, r.Proxy.UpstreamFetchesPerSec)
	if err != nil {
		return err
	}
	lat, err := panel("end-to-end latency", "ms", []string{"direct p50", "proxy p50", "direct p99", "proxy p99"},
		r.Direct.Latency.P50, r.Proxy.Latency.P50, r.Direct.Latency.P99, r.Proxy.Latency.P99)
	if err != nil {
		return err
	}
	proxy, err := panel("proxy memory", "MiB", []string{"resident", "peak resident"}, r.Proxy.ProxyRSSMiB, r.Proxy.ProxyPeakRSSMiB)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Centimeter / 2, PadBottom: vg.Centimeter / 2, PadLeft: vg.Centimeter / 2, PadRight: vg.Centimeter / 2}
	for i, p := range []*plot.Plot{cpu, fetches, lat, proxy} {
		p.Draw(tiles.At(dc, i%2, i/2))
	}
	return nil
}
