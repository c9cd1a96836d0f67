package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"
)

// errUsage marks a configuration error: exit status 2.
var errUsage = errors.New("invalid flags")

// config is one run's settings.
type config struct {
	consumers    int
	partitions   int
	rate         float64 // records a second, over all partitions
	size         int     // bytes of each record's value
	warmup       time.Duration
	duration     time.Duration
	fetchMaxWait time.Duration // the consumers'
	tailMaxWait  time.Duration // the proxy's tail.fetch.max.wait.ms
	json         bool
	plot         string
	serverCPUs   []int // the broker's and the proxy's CPUs; nil: not pinned
	clientCPUs   []int // this tool's, the others, when serverCPUs is set
}

func defaultConfig() config {
	return config{
		consumers:    100,
		partitions:   12,
		rate:         1000,
		size:         100,
		warmup:       5 * time.Second,
		duration:     30 * time.Second,
		fetchMaxWait: 500 * time.Millisecond,
		tailMaxWait:  500 * time.Millisecond,
	}
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("proxyperf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.consumers, "consumers", cfg.consumers, "consumers, each reading every partition from its end")
	fs.IntVar(&cfg.partitions, "partitions", cfg.partitions, "partitions of the topic")
	fs.Float64Var(&cfg.rate, "rate", cfg.rate, "records produced a second, spread evenly over the partitions")
	fs.IntVar(&cfg.size, "size", cfg.size, "bytes of each record's value (at least 8: the produce time)")
	fs.DurationVar(&cfg.warmup, "warmup", cfg.warmup, "load before measuring, in each phase")
	fs.DurationVar(&cfg.duration, "duration", cfg.duration, "measured time, in each phase")
	fs.DurationVar(&cfg.fetchMaxWait, "fetch-max-wait", cfg.fetchMaxWait, "the consumers' fetch.max.wait.ms")
	fs.DurationVar(&cfg.tailMaxWait, "tail-max-wait", cfg.tailMaxWait, "the proxy's tail.fetch.max.wait.ms")
	fs.BoolVar(&cfg.json, "json", false, "print one JSON object instead of text")
	fs.StringVar(&cfg.plot, "plot", "", "write an SVG of the two phases here")
	servers := fs.String("server-cpus", "", "run the broker and the proxy on these CPUs (a taskset list: 0, 0-1, 0,2) and the clients on the others")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if *servers != "" {
		var err error
		if cfg.serverCPUs, err = parseCPUList(*servers); err != nil {
			return config{}, err
		}
		if cfg.clientCPUs, err = otherCPUs(cfg.serverCPUs, runtime.NumCPU()); err != nil {
			return config{}, err
		}
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	switch {
	case cfg.consumers < 1 || cfg.partitions < 1:
		return config{}, fmt.Errorf("%w: --consumers and --partitions must be at least 1", errUsage)
	case cfg.rate <= 0:
		return config{}, fmt.Errorf("%w: --rate must be positive", errUsage)
	case cfg.size < 8:
		return config{}, fmt.Errorf("%w: --size must be at least 8", errUsage)
	case cfg.duration <= 0 || cfg.warmup < 0 || cfg.fetchMaxWait <= 0 || cfg.tailMaxWait <= 0:
		return config{}, fmt.Errorf("%w: --duration and the max waits must be positive, --warmup not negative", errUsage)
	}
	return cfg, nil
}

// configFields is the settings part of a result.
type configFields struct {
	Consumers      int     `json:"consumers"`
	Partitions     int     `json:"partitions"`
	Rate           float64 `json:"rate"`
	SizeBytes      int     `json:"size_bytes"`
	WarmupS        float64 `json:"warmup_s"`
	DurationS      float64 `json:"duration_s"`
	FetchMaxWaitMS int64   `json:"fetch_max_wait_ms"`
	TailMaxWaitMS  int64   `json:"tail_max_wait_ms"`
	ServerCPUs     string  `json:"server_cpus,omitempty"` // empty: servers and clients share every CPU
	ClientCPUs     string  `json:"client_cpus,omitempty"`
}

func (c config) fields() configFields {
	return configFields{Consumers: c.consumers, Partitions: c.partitions, Rate: c.rate, SizeBytes: c.size,
		WarmupS: c.warmup.Seconds(), DurationS: c.duration.Seconds(),
		FetchMaxWaitMS: c.fetchMaxWait.Milliseconds(), TailMaxWaitMS: c.tailMaxWait.Milliseconds(),
		ServerCPUs: cpuList(c.serverCPUs), ClientCPUs: cpuList(c.clientCPUs)}
}
