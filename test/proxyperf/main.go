// Command proxyperf measures what the example proxy saves a broker when
// many consumers tail the same partitions, side by side in one run: the
// same load straight at the broker ("direct"), then through the proxy
// ("proxy").
//
// Each phase starts a fresh broker (examples/broker, built by the tool)
// and, for the proxy phase, a proxy in front of it (examples/proxy), each a
// child process of its own, so that their CPU is measured apart from the
// tool's. A producer writes --rate records a second, spread evenly over the
// --partitions partitions of a new topic, straight to the broker in both
// phases (so the produce load on the broker is the same); --consumers
// consumers, each a kgo client reading every partition from its end
// (--fetch-max-wait), read them, from the broker or from the proxy. Each
// record carries the time it was produced; a consumer's receive time minus
// it is the end-to-end latency. After --warmup the tool measures for
// --duration:
//
//   - broker CPU: its user + system time (/proc/<pid>/stat), in cores;
//   - upstream fetch requests a second: the broker's
//     broker_requests_total{api="Fetch"} (its /metrics), which counts the
//     consumers' fetches direct and the proxy's through it;
//   - client fetch requests a second, at the broker or at the proxy;
//   - end-to-end latency percentiles of the records produced in the window,
//     over every consumer, and the share delivered;
//   - proxy CPU in cores, and its resident memory (VmRSS at the end, VmHWM
//     peak).
//
// It prints both phases side by side with the ratios the issue sets
// targets for (at least 20x fewer fetches and 5x less broker CPU through
// the proxy, at most 1 ms added at p99), and with --plot writes them as an
// SVG. Run it on a quiet machine: the consumers run in the tool's process
// and, unless --server-cpus keeps them apart (see pin.go), compete with the
// broker and the proxy for CPU.
//
// Usage:
//
//	go run ./test/proxyperf --consumers 100 --partitions 12 --rate 1000 --duration 30s --server-cpus 0 --plot proxy.svg
//	go run ./test/proxyperf --consumers 5 --partitions 2 --rate 100 --warmup 1s --duration 2s  # a smoke run
//
// Linux only (/proc; taskset for --server-cpus). The metrics listeners take free loopback ports found
// at start.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// realMain is main without the exit: 2 for bad flags, 1 for a failed run.
func realMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "proxyperf: %v\n", err)
		return 2
	case err != nil:
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg.serverCPUs != nil {
		if err := pinSelf(cfg.clientCPUs); err != nil {
			fmt.Fprintf(stderr, "proxyperf: %v\n", err)
			return 1
		}
	}

	bins, err := build(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "proxyperf: %v\n", err)
		return 1
	}
	defer bins.cleanup()
	var res result
	res.Config = cfg.fields()
	for _, viaProxy := range []bool{false, true} {
		ph, err := runPhase(ctx, cfg, bins, viaProxy, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "proxyperf: %s phase: %v\n", phaseName(viaProxy), err)
			return 1
		}
		if viaProxy {
			res.Proxy = ph
		} else {
			res.Direct = ph
		}
	}
	res.compare()
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "proxyperf: %v\n", err)
			return 1
		}
	} else {
		res.print(stdout)
	}
	if cfg.plot != "" {
		if err := writePlot(cfg.plot, res); err != nil {
			fmt.Fprintf(stderr, "proxyperf: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "proxyperf: plot written to %s\n", cfg.plot)
	}
	return 0
}

func phaseName(viaProxy bool) string {
	if viaProxy {
		return "proxy"
	}
	return "direct"
}
