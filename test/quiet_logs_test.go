package test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// TestClusterCleanStartAndStopLogNothingAtWarn: three brokers that start,
// elect a controller, create a replicated topic and stop together (as
// make cluster's Ctrl-C stops them) log nothing at warn or error: an
// operator's logs show trouble only when there is some. Each broker logs
// through a production logger (stack frames on errors) into an observer.
func TestClusterCleanStartAndStopLogNothingAtWarn(t *testing.T) {
	c := newTestCluster(t, 3)
	var logs []*observer.ObservedLogs
	for i := range c.cfgs {
		core, observed := observer.New(zapcore.InfoLevel)
		logs = append(logs, observed)
		srv, err := server.New(c.cfgs[i], zap.New(core, zap.AddStacktrace(zapcore.ErrorLevel)))
		require.NoError(t, err)
		served := make(chan error, 1)
		go func() { served <- srv.Serve() }()
		c.brokers[i] = srv
		c.stops[i] = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, srv.Close(ctx))
			require.NoError(t, <-served)
		}
	}
	admin := c.client()
	c.createTopic(admin, "quiet", 3, 3, nil)
	admin.Close()

	var wg sync.WaitGroup
	for _, stop := range c.stops {
		wg.Go(stop)
	}
	wg.Wait()
	for i, observed := range logs {
		for _, e := range observed.All() {
			if e.Level >= zapcore.WarnLevel {
				t.Errorf("broker %d logged at %s: %s %v", i+1, e.Level, e.Message, e.ContextMap())
			}
		}
	}
}
