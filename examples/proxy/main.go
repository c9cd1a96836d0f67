// Command proxy runs a Kafka proxy in front of a Kafka cluster: clients
// see it as their one broker, and every consumer that reads a partition at
// its end is served from one shared upstream long poll per partition,
// waiting in the proxy's fetch purgatory:
//
//	go run ./examples/proxy --upstream 127.0.0.1:9092 --listeners 127.0.0.1:9192
//	go run ./examples/proxy --upstream b1:9092,b2:9092 --cache.bytes.per.partition 16777216
//	go run ./examples/proxy --config proxy.properties
//
// Flags are named as Kafka names its configs (go run ./examples/proxy -h
// lists them); a Kafka-style properties file given with --config sets them
// too, and flags on the command line win. --metrics.listener serves
// /metrics (the purgatory's, upstream fetches, the cache hit ratio,
// waiting fetches) and /debug/pprof. SIGINT or SIGTERM shuts it down
// gracefully: it stops reading requests, answers the fetches waiting in
// its purgatory and the forwards in flight, and exits. See package server
// for what it serves and how.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gopurgatory/purgatory/examples/proxy/server"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "proxy:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	// The properties file first: the command line's flags then override
	// it, parsed with its values as defaults.
	cfg := server.Default()
	if path := configFlag(args); path != "" {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = cfg.LoadProperties(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.String("config", "", "Kafka-style properties file (flags on the command line win)")
	logLevel := fs.String("log.level", "info", "log level: debug, info, warn, error")
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	level, err := zapcore.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("log.level: %w", err)
	}
	zcfg := zap.NewProductionConfig()
	zcfg.Level = zap.NewAtomicLevelAt(level)
	zcfg.Encoding = "console"
	zcfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	log, err := zcfg.Build()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()

	srv, err := server.New(cfg, log)
	if err != nil {
		return err
	}
	var metrics *http.Server
	if cfg.MetricsAddr != "" {
		srv.Registry().MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mux := http.NewServeMux()
		mux.Handle("/metrics", srv.MetricsHandler())
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		metrics = &http.Server{Addr: cfg.MetricsAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := metrics.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics listener", zap.Error(err))
			}
		}()
		log.Info("serving /metrics and /debug/pprof", zap.String("addr", cfg.MetricsAddr))
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		log.Info("shutting down", zap.Stringer("signal", s))
	case err := <-served:
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if metrics != nil {
		_ = metrics.Shutdown(ctx)
	}
	return srv.Close(ctx)
}

// configFlag returns the value of --config in args, in any of the forms
// the flag package takes (-config x, --config=x).
func configFlag(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ""
		}
		if !strings.HasPrefix(a, "-") {
			continue // a flag's value
		}
		name, value, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "config" {
			continue
		}
		if inline {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}
