package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet/kafkanettest"
)

// newTestServer starts a broker on a free loopback port, closed at the end
// of the test.
func newTestServer(t *testing.T, tweak ...func(*Config)) *Server {
	t.Helper()
	cfg := Default()
	cfg.Listener = "127.0.0.1:0"
	for _, f := range tweak {
		f(&cfg)
	}
	s, err := New(cfg, nil)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Close(ctx))
		require.NoError(t, <-served)
	})
	return s
}

// rawConn is a raw client (package kafkanettest), which the tests give
// methods of their own (groups_test.go).
type rawConn struct{ *kafkanettest.Client }

func dialRaw(t *testing.T, s *Server) *rawConn {
	t.Helper()
	return &rawConn{kafkanettest.Dial(t, s.Addr().String())}
}

// refused returns how many refusals of reason the broker counted in
// broker_refusals_total.
func refused(s *Server, reason string) float64 {
	mfs, err := s.Registry().Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "broker_refusals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
