package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"text/tabwriter"
)

// sweep runs the settings once per rate, each in a fresh child process of
// this program: a run's heap, RSS high-water mark and GC pacing would
// otherwise carry over to the next. It prints a table (or, with --json, one
// object with every run) and writes the plot.
func sweep(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		self = os.Args[0] // what os.Executable resolves, when it can
	}
	results := make([]result, 0, len(cfg.sweep))
	for _, rate := range cfg.sweep {
		fmt.Fprintf(stderr, "sweep: rate %.0f/s, %d requests...\n", rate, cfg.num)
		r, err := runChild(ctx, self, childArgs(cfg, rate), stderr)
		if err != nil {
			return fmt.Errorf("sweep at rate %v: %w", rate, err)
		}
		results = append(results, r)
	}
	if err := writeSweepPlot(cfg.plot, results); err != nil {
		return err
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Runs []result `json:"runs"`
			Plot string   `json:"plot"`
		}{results, cfg.plot})
	}
	if err := writeSweepTable(stdout, results); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "plot written to %s\n", cfg.plot)
	return err
}

// childArgs passes every setting of a run explicitly rather than editing
// os.Args, so that the child runs exactly what the parent reports.
func childArgs(cfg config, rate float64) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return []string{
		"--rate", f(rate),
		"--num", strconv.Itoa(cfg.num),
		"--keys", strconv.Itoa(cfg.keys),
		"--threads", strconv.Itoa(cfg.threads),
		"--key-space-size", strconv.Itoa(cfg.keySpaceSize),
		"--size", strconv.Itoa(cfg.size),
		"--pct50", f(cfg.pct50),
		"--pct75", f(cfg.pct75),
		"--timeout", strconv.Itoa(cfg.timeoutMS),
		"--seed", strconv.FormatUint(cfg.seed, 10),
		"--json",
		"--progress=false",
	}
}

// runChild runs one child and decodes the JSON it prints; its stderr is
// passed through, so its errors reach the user.
func runChild(ctx context.Context, self string, args []string, stderr io.Writer) (result, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Stdout = &out
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("child %s: %w", self, err)
	}
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return result{}, fmt.Errorf("child output %q: %w", out.String(), err)
	}
	return r, nil
}

func writeSweepTable(w io.Writer, rs []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target/s\tachieved/s\tratio\twall s\tcpu s\tgc\tgc pause ms\theap MiB\tRSS MiB\tp50 ms\tp99 ms\tmodel p99 ms\tp99.9 ms\texpired\tleft by reaper\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%.0f\t%.0f\t%.3f\t%.2f\t%.2f\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%d\t\n",
			r.TargetRate, r.AchievedRate, r.AchievedRatio, r.WallMS/1000, r.CPUMS/1000, r.GCCycles, r.GCPauseMS,
			r.PeakHeapMiB, r.PeakRSSMiB, r.Latency.P50MS, r.Latency.P99MS, r.ModelLatency.P99MS,
			r.Latency.P999MS, r.Expired, r.WatchedAfterReaper)
	}
	return tw.Flush()
}
