// Command perf measures the purgatory under a synthetic load: the Go
// counterpart of Apache Kafka's TestPurgatoryPerformance.
//
// A generator submits --num requests at --rate per second, as a Poisson
// process and open loop: arrival i is due at the start plus i exponential
// gaps whatever the submissions cost, and a generator that falls behind
// submits at once to catch up, which the achieved rate shows. Each request is
// watched under --keys keys drawn from --key-space-size, and draws its
// completion latency from a log-normal with the given 50th and 75th
// percentiles. A request drawn under --timeout is answered at arrival plus
// latency by a completion queue (ForceComplete); the others expire through the
// purgatory. The tool waits until every request is answered, then reports the
// achieved rate, wall and CPU time, GC cycles and pauses, peak heap and RSS,
// the completion-latency percentiles next to the model's, the outcomes, and
// the purgatory's counts at the end. --sweep repeats the run for several
// rates, each in a fresh child process, and plots the results.
//
// How it differs from Kafka's tool:
//   - each request draws its keys anew (distinct within a request); Kafka's
//     generator draws one set of keys and reuses it for every request;
//   - latencies and gaps are drawn for every request, not cycled from a
//     thousand precomputed samples;
//   - --size is honoured: each request holds a payload of that many bytes
//     until it is answered (Kafka's tool parses the flag and ignores it);
//   - the completion queue is a timing wheel of this repository (package
//     timer) driven by one goroutine, where Kafka uses a DelayQueue thread; it
//     runs in the measured process, as Kafka's thread does;
//   - it measures completion latency from the due arrival to OnComplete, and
//     the generator's lateness apart, which Kafka's tool does not;
//   - CPU time is getrusage's user + sys for the whole process, and memory is
//     the peak heap in use (sampled every 100ms) and the peak RSS (VmHWM),
//     where Kafka samples the JVM's heap and CPU beans.
//
// Usage:
//
//	go run ./test/perf --num 1000000 --rate 100000 --timeout 1000 --pct75 750 --pct50 500
//	go run ./test/perf --num 10000000 --rate 1000000 --threads 2   # past Kafka's range: a million a second
//	go run ./test/perf --num 200000 --sweep 10000,50000,100000 --plot /tmp/sweep.svg
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

// realMain is main without the exit, returning the exit status: 2 for bad
// flags, 1 for a failed run.
func realMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "perf: %v\n", err)
		return 2
	case err != nil:
		return 2 // the flag package printed it, with the usage
	}

	// Ctrl-C stops the generator (and a sweep's children) and still closes
	// the purgatory, so no run is left half-measured without a word.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if len(cfg.sweep) > 0 {
		err = sweep(ctx, cfg, stdout, stderr)
	} else {
		err = single(ctx, cfg, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "perf: %v\n", err)
		return 1
	}
	return 0
}

// single runs once and prints the result.
func single(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	var progress io.Writer
	if cfg.progress {
		progress = stderr
	}
	r, err := run(ctx, cfg, progress)
	if err != nil {
		return err
	}
	if cfg.json {
		return json.NewEncoder(stdout).Encode(r)
	}
	return writeText(stdout, r)
}
