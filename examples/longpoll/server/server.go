package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

// Server is the long-poll service: its store, the purgatory its GETs wait
// in, and the HTTP server that serves them. Use Handler with an HTTP
// server of your own, or Serve; either way, Shutdown answers what waits.
type Server struct {
	cfg   Config                       // immutable, as everything below
	log   *zap.Logger                  // never nil
	store *store                       // every key's value and version
	waits *purgatory.Purgatory[string] // GETs waiting, watched under their key
	reg   *prometheus.Registry         // the purgatory's metrics and the runtime's; never the default registry
	mux   http.Handler                 // the routes: Handler's
	http  *http.Server                 // Serve's, on mux

	// bodyTimeout bounds reading a POST's body (bodyReadTimeout; tests
	// shorten it), set before serving, as hooks.
	bodyTimeout time.Duration
	hooks       testHooks // nil functions but in tests
}

// bodyReadTimeout bounds the time to read a POST's body, so that a client
// trickling one in does not hold its connection. The server has no
// ReadTimeout, which would also cut a GET's wait short: net/http would
// cancel its context when the deadline passed.
const bodyReadTimeout = 10 * time.Second

// testHooks let the tests observe a GET's steps instead of sleeping for
// them. Nil in production.
type testHooks struct {
	parked   func(key string)                      // the GET's wait is watched: a POST now wakes it
	answered func(key string, o operation.Outcome) // the wait completed; the handler writes next
}

// New returns a service with the settings of cfg, logging to log (nil:
// nothing but the purgatory's recovered panics, which go to standard
// error). It starts the purgatory's goroutines; Shutdown stops them.
func New(cfg Config, log *zap.Logger) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts := []purgatory.Option{
		purgatory.WithRegisterer(reg),
		// The cap on waiters: past it, a wait is answered at once with
		// outcome Rejected (a 503), never queued.
		purgatory.WithTimerOptions(timer.WithMaxPending(cfg.MaxWaiters)),
	}
	if log != nil {
		opts = append(opts, purgatory.WithLogger(log.Named("purgatory")))
	} else {
		// No WithLogger: the purgatory's default then writes a recovered
		// panic to standard error, where a no-op logger would drop it.
		log = zap.NewNop()
	}
	if cfg.Clock != nil {
		opts = append(opts, purgatory.WithClock(cfg.Clock))
	}
	waits, err := purgatory.New[string]("longpoll", opts...)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, store: newStore(cfg.MaxKeys), waits: waits, reg: reg, bodyTimeout: bodyReadTimeout}
	s.mux = s.routes()
	s.http = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// No ReadTimeout (see bodyReadTimeout) nor WriteTimeout: both
		// count from the request's headers, and would cut a GET's wait
		// or its answer short.
		ErrorLog: zap.NewStdLog(log.Named("http")),
	}
	return s, nil
}

// Handler returns the service's routes (see the package documentation).
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	// {key...} takes the rest of the path, so that a key may hold '/' and
	// a missing key reaches the handler (and its 400) instead of a 404.
	mux.HandleFunc("GET /v1/keys/{key...}", s.get)
	mux.HandleFunc("POST /v1/keys/{key...}", s.post)
	mux.HandleFunc("GET /v1/stats", s.stats)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	return mux
}

// Serve serves HTTP on ln until Shutdown, and then returns nil.
func (s *Server) Serve(ln net.Listener) error {
	s.log.Info("serving", zap.Stringer("addr", ln.Addr()))
	if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops the service gracefully, in two steps:
//
//  1. Close the purgatory: every GET waiting is answered 503 (outcome
//     Closed), and one arriving from now on too (ErrClosed).
//  2. Shut the HTTP server down: it stops listening and waits, at most
//     until ctx is done, for the handlers to write those answers.
//
// The reverse order would wait for the GETs' timeouts. Shutdown is safe
// without Serve, for a Handler served by a server of the caller's, which
// the caller then shuts down.
func (s *Server) Shutdown(ctx context.Context) error {
	waiting := s.waits.Pending()
	_ = s.waits.Close() // always nil
	s.log.Info("answered the waiting requests", zap.Int("waiting", waiting))
	return s.http.Shutdown(ctx)
}

// Pending returns the number of GETs waiting (Purgatory.Pending).
func (s *Server) Pending() int { return s.waits.Pending() }
