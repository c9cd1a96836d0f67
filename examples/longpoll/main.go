// Command longpoll runs an HTTP long-poll service on the purgatory: clients
// store values under keys, and wait, each GET parked as a delayed operation
// under its key, for a key's next value:
//
//	go run ./examples/longpoll                      # on 127.0.0.1:8080
//	curl -i 'localhost:8080/v1/keys/greeting?after=0&timeout=30s' &
//	curl -d hello localhost:8080/v1/keys/greeting   # answers the GET above
//
// go run ./examples/longpoll --help lists the API and the flags; package
// server says how it works. SIGINT or SIGTERM shuts it down gracefully:
// every waiting GET is answered 503, then the HTTP server stops.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gopurgatory/purgatory/examples/longpoll/server"
)

// usage is the head of --help: the API, before the flags.
const usage = `Usage: longpoll [flags]

An HTTP long-poll service on the purgatory.

  POST /v1/keys/{key}                    store the body as the key's next version; wake its waiters
  GET  /v1/keys/{key}?after=N&timeout=D  the value once the key is past version N (200),
                                         or nothing new within the timeout (204);
                                         the Key-Version header carries the version
  GET  /v1/stats                         {"pending":P,"keys":K}: GETs waiting, keys stored
  GET  /metrics                          Prometheus metrics

Try:
  curl -i 'localhost:8080/v1/keys/greeting?after=0&timeout=30s' &
  curl -d hello localhost:8080/v1/keys/greeting

Flags:
`

// shutdownTimeout bounds a graceful shutdown: answering the waiting GETs
// takes microseconds, writing them to slow clients may not.
const shutdownTimeout = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A second signal after the first restores the default: it kills.
	go func() { <-ctx.Done(); stop() }()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		// --help printed the usage: that is success.
	case err != nil:
		fmt.Fprintln(os.Stderr, "longpoll:", err)
		os.Exit(1)
	}
}

// run serves until ctx is done, then shuts down gracefully. It prints the
// address it listens on to stdout (the first line), and logs to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := server.Default()
	fs := flag.NewFlagSet("longpoll", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	listen := fs.String("listen", "127.0.0.1:8080", "host:port to serve HTTP on (port 0: any free port)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	level, err := zapcore.ParseLevel(*logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(stderr), level))
	defer func() { _ = log.Sync() }()

	srv, err := server.New(cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		_ = srv.Shutdown(ctx) // stops the purgatory's goroutines
		return err
	}
	fmt.Fprintf(stdout, "longpoll: listening on http://%s (Ctrl-C stops)\n", ln.Addr())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-served: // the listener failed
		_ = srv.Shutdown(context.Background())
		return err
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-served; err == nil {
		err = serr
	}
	return err
}
