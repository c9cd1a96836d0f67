package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
)

// percentiles of a latency, in milliseconds.
type percentiles struct {
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
	Count int     `json:"count"`
}

// percentilesOf sorts xs and reads its percentiles (nearest rank).
func percentilesOf(xs []float64) percentiles {
	if len(xs) == 0 {
		return percentiles{}
	}
	slices.Sort(xs)
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(xs)))) - 1
		return xs[min(max(i, 0), len(xs)-1)]
	}
	return percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), P999: at(0.999), Max: xs[len(xs)-1], Count: len(xs)}
}

// result is a run: both phases and how they compare.
type result struct {
	Config configFields `json:"config"`
	Direct phase        `json:"direct"`
	Proxy  phase        `json:"proxy"`

	// FetchReduction is direct upstream fetches / proxy upstream fetches
	// (target: at least 20); BrokerCPUReduction the same for broker CPU
	// (target: at least 5); AddedP99MS is proxy p99 - direct p99 (target:
	// at most 1).
	FetchReduction     float64 `json:"fetch_reduction"`
	BrokerCPUReduction float64 `json:"broker_cpu_reduction"`
	AddedP50MS         float64 `json:"added_p50_ms"`
	AddedP99MS         float64 `json:"added_p99_ms"`
}

func (r *result) compare() {
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return math.Inf(1)
		}
		return a / b
	}
	r.FetchReduction = ratio(r.Direct.UpstreamFetchesPerSec, r.Proxy.UpstreamFetchesPerSec)
	r.BrokerCPUReduction = ratio(r.Direct.BrokerCPUCores, r.Proxy.BrokerCPUCores)
	r.AddedP50MS = r.Proxy.Latency.P50 - r.Direct.Latency.P50
	r.AddedP99MS = r.Proxy.Latency.P99 - r.Direct.Latency.P99
}

// print writes the phases side by side.
func (r *result) print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "%d consumers tailing %d partitions, %.0f records/s of %d bytes, %.0fs measured after %.0fs (fetch.max.wait.ms %d, tail.fetch.max.wait.ms %d)\n",
		c.Consumers, c.Partitions, c.Rate, c.SizeBytes, c.DurationS, c.WarmupS, c.FetchMaxWaitMS, c.TailMaxWaitMS)
	if c.ServerCPUs != "" {
		fmt.Fprintf(w, "broker and proxy on CPUs %s, clients on CPUs %s\n", c.ServerCPUs, c.ClientCPUs)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	d, p := &r.Direct, &r.Proxy
	fmt.Fprintf(tw, "\tdirect\tproxy\t\t\n")
	fmt.Fprintf(tw, "broker CPU (cores)\t%.3f\t%.3f\t%.1fx less\t  (target 5x)\n", d.BrokerCPUCores, p.BrokerCPUCores, r.BrokerCPUReduction)
	fmt.Fprintf(tw, "fetches at the broker /s\t%.1f\t%.1f\t%.1fx fewer\t  (target 20x)\n", d.UpstreamFetchesPerSec, p.UpstreamFetchesPerSec, r.FetchReduction)
	fmt.Fprintf(tw, "client fetches /s\t%.1f\t%.1f\t\t\n", d.ClientFetchesPerSec, p.ClientFetchesPerSec)
	fmt.Fprintf(tw, "latency p50 (ms)\t%.3f\t%.3f\t%+.3f\t\n", d.Latency.P50, p.Latency.P50, r.AddedP50MS)
	fmt.Fprintf(tw, "latency p99 (ms)\t%.3f\t%.3f\t%+.3f\t  (target +1 at most)\n", d.Latency.P99, p.Latency.P99, r.AddedP99MS)
	fmt.Fprintf(tw, "latency p99.9 (ms)\t%.3f\t%.3f\t\t\n", d.Latency.P999, p.Latency.P999)
	fmt.Fprintf(tw, "latency max (ms)\t%.3f\t%.3f\t\t\n", d.Latency.Max, p.Latency.Max)
	fmt.Fprintf(tw, "records produced\t%d\t%d\t\t\n", d.Produced, p.Produced)
	fmt.Fprintf(tw, "delivered\t%.2f%%\t%.2f%%\t\t\n", 100*d.Delivered, 100*p.Delivered)
	fmt.Fprintf(tw, "proxy's own latency p50 / p99 (ms)\t-\t%.3f / %.3f\t  (upstream answer to client write, %d fetches)\t\n",
		p.ProxyOwn.P50, p.ProxyOwn.P99, p.ProxyOwn.Count)
	fmt.Fprintf(tw, "proxy CPU (cores)\t-\t%.3f\t\t\n", p.ProxyCPUCores)
	fmt.Fprintf(tw, "proxy RSS (MiB)\t-\t%.1f\t  (peak %.1f)\t\n", p.ProxyRSSMiB, p.ProxyPeakRSSMiB)
	_ = tw.Flush()
}
