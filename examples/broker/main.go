// Command broker runs a Kafka-protocol broker whose every wait is an
// operation in a purgatory. Real Kafka clients use it unchanged:
//
//	go run ./examples/broker
//	go run ./examples/broker --listeners 127.0.0.1:19092 --num.partitions 3
//	go run ./examples/broker --log.dirs /var/lib/purgatory-broker
//	go run ./examples/broker --config broker.properties
//
// Flags are named after Kafka's broker configs (go run ./examples/broker
// -h lists them); a Kafka-style properties file given with --config sets
// them too, and flags on the command line win. Without --log.dirs the
// broker keeps everything in memory; with it, topics, records and group
// offsets survive a restart, and a kill -9 loses nothing acknowledged (a
// power loss may, unless --log.flush.interval.messages=1: see package
// server, # Durability). SIGINT or SIGTERM shuts it
// down gracefully: it stops accepting, answers the requests waiting in its
// purgatories, writes what it owes and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
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

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "broker:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	// The properties file is read first, so that flags on the command line
	// override it: they are parsed with its values as defaults.
	cfg := server.Default()
	if path := configPath(args); path != "" {
		if err := loadConfig(&cfg, path); err != nil {
			return err
		}
	}
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.String("config", "", "Kafka-style properties file (flags given on the command line win)")
	logLevel := fs.String("log.level", "info", "log level: debug, info, warn, error")
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // -h: the usage is printed, and that is all that was asked
		}
		return err
	}
	level, err := zapcore.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("log.level: %w", err)
	}

	logCfg := zap.NewProductionConfig()
	logCfg.Level = zap.NewAtomicLevelAt(level)
	logCfg.Encoding = "console"
	logCfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	log, err := logCfg.Build()
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
		ln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			_ = srv.Close(context.Background())
			return fmt.Errorf("metrics.listener: %w", err)
		}
		metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := metrics.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics listener", zap.Error(err))
			}
		}()
		log.Info("serving /metrics and /debug/pprof", zap.Stringer("addr", ln.Addr()))
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

// configPath finds --config in args (-config, --config=x, --config x).
func configPath(args []string) string {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "config" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// loadConfig applies a properties file.
func loadConfig(cfg *server.Config, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := cfg.LoadProperties(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
