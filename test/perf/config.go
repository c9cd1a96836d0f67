package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// errUsage marks a configuration error, so that main can exit with the
// conventional status 2 and the flag package's usage text stays in place.
var errUsage = errors.New("invalid flags")

// config is one run's settings, plus what main does with the run (JSON,
// sweep, plot). It is passed by value: a sweep copies it once per rate.
type config struct {
	keySpaceSize int     // keys a request's watch keys are drawn from
	keys         int     // watch keys per request, distinct
	num          int     // requests to submit
	rate         float64 // target arrivals per second (Poisson)
	size         int     // payload bytes each request holds until completed
	pct50        float64 // median of the completion-latency model, ms
	pct75        float64 // 75th percentile of the model, ms
	timeoutMS    int     // purgatory deadline of every request, ms
	seed         uint64  // seeds every random draw, for repeatable runs
	threads      int     // goroutines submitting, each a Poisson process at rate/threads

	progress bool      // print a line a second on long runs
	json     bool      // print JSON instead of text
	sweep    []float64 // rates to run, one child process each
	plot     string    // where a sweep writes its SVG
	cpuProf  string    // file a single run writes its CPU profile to
}

func defaultConfig() config {
	return config{
		keySpaceSize: 100,
		keys:         3,
		num:          1_000_000,
		rate:         100_000,
		pct50:        500,
		pct75:        750,
		timeoutMS:    1000,
		seed:         1,
		threads:      1,
		progress:     true,
		plot:         "purgatory-sweep.svg",
	}
}

// parseFlags parses args (without the program name) into a validated config.
// A FlagSet of its own keeps the flags out of package state, so tests can
// parse as often as they like.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("perf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.keySpaceSize, "key-space-size", cfg.keySpaceSize, "number of distinct keys (named fakeKey%d) requests are watched under")
	fs.IntVar(&cfg.keys, "keys", cfg.keys, "watch keys per request, drawn anew and distinct for each request")
	fs.IntVar(&cfg.num, "num", cfg.num, "number of requests")
	fs.Float64Var(&cfg.rate, "rate", cfg.rate, "target request rate per second (Poisson arrivals)")
	fs.IntVar(&cfg.size, "size", cfg.size, "payload bytes each request allocates and holds until it completes")
	fs.Float64Var(&cfg.pct75, "pct75", cfg.pct75, "75th percentile of the completion latency, ms")
	fs.Float64Var(&cfg.pct50, "pct50", cfg.pct50, "50th percentile of the completion latency, ms")
	fs.IntVar(&cfg.timeoutMS, "timeout", cfg.timeoutMS, "request timeout (purgatory deadline), ms")
	fs.Uint64Var(&cfg.seed, "seed", cfg.seed, "random seed")
	fs.IntVar(&cfg.threads, "threads", cfg.threads, "goroutines submitting requests, each at rate/threads (a broker submits from many connections)")
	fs.BoolVar(&cfg.json, "json", false, "print one JSON object instead of text")
	fs.BoolVar(&cfg.progress, "progress", cfg.progress, "print a progress line each second to stderr on runs longer than ~2s")
	sweep := fs.String("sweep", "", "comma-separated rates: run once per rate, each in a fresh child process, and plot")
	fs.StringVar(&cfg.plot, "plot", cfg.plot, "SVG file a sweep writes its plot to")
	fs.StringVar(&cfg.cpuProf, "cpuprofile", "", "file a single run writes a CPU profile of its measured part to (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return config{}, err // flag.ErrHelp, or an error the FlagSet has printed
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if *sweep != "" {
		rates, err := parseRates(*sweep)
		if err != nil {
			return config{}, err
		}
		cfg.sweep = rates
	}
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// parseRates reads the --sweep list.
func parseRates(s string) ([]float64, error) {
	var rates []float64
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		r, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: --sweep: %q is not a rate: %w", errUsage, f, err)
		}
		if !(r > 0) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("%w: --sweep: rate %v must be a positive number", errUsage, r)
		}
		rates = append(rates, r)
	}
	return rates, nil
}

// validate checks what a run needs; every message names the flag.
func (c config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
	}
	switch {
	case c.num <= 0:
		return bad("--num must be > 0, got %d", c.num)
	case !(c.rate > 0) || math.IsInf(c.rate, 0):
		return bad("--rate must be a positive number, got %v", c.rate)
	case c.threads <= 0 || c.threads > c.num:
		return bad("--threads must be between 1 and --num, got %d", c.threads)
	case c.keys <= 0:
		return bad("--keys must be > 0, got %d", c.keys)
	case c.keySpaceSize <= 0:
		return bad("--key-space-size must be > 0, got %d", c.keySpaceSize)
	case c.keys > c.keySpaceSize:
		// A request's keys are distinct, so the space must hold them.
		return bad("--keys (%d) must not exceed --key-space-size (%d)", c.keys, c.keySpaceSize)
	case c.size < 0:
		return bad("--size must be >= 0, got %d", c.size)
	case !(c.pct50 > 0) || math.IsInf(c.pct50, 0):
		return bad("--pct50 must be a positive number of ms, got %v", c.pct50)
	case !(c.pct75 > c.pct50) || math.IsInf(c.pct75, 0):
		// sigma = (ln pct75 - ln pct50) / z75 must be positive.
		return bad("--pct75 (%v) must exceed --pct50 (%v)", c.pct75, c.pct50)
	case c.timeoutMS <= 0:
		return bad("--timeout must be > 0 ms, got %d", c.timeoutMS)
	case len(c.sweep) > 0 && c.plot == "":
		return bad("--plot must name a file when --sweep is given")
	}
	return nil
}
