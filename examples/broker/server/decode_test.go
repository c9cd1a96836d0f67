package server

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDecodeOverrunClosesOnlyThatConnection stands a decoder that never
// returns in for kmsg's (as a forged tag count makes it, for a minute):
// the connection is closed once the budget passes, the broker serves
// others meanwhile, and its shutdown does not wait for the stuck decode.
func TestDecodeOverrunClosesOnlyThatConnection(t *testing.T) {
	cfg := Default()
	cfg.Listener = "127.0.0.1:0"
	s, err := New(cfg, nil)
	require.NoError(t, err)
	release := make(chan struct{})
	stuck := make(chan struct{}, 1)
	s.decodeBudget = 50 * time.Millisecond
	s.decode = func(kreq kmsg.Request, src []byte) error {
		if kreq.IsFlexible() {
			stuck <- struct{}{}
			<-release
		}
		return kreq.ReadFrom(src)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()

	bad := dialRaw(t, s)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3) // flexible
	bad.send(req)
	<-stuck
	assert.True(t, bad.closedByPeer(), "closed once the budget passed")
	assert.Equal(t, 1.0, testutil.ToFloat64(s.metrics.decodeOverruns))

	good := dialRaw(t, s)
	old := kmsg.NewPtrApiVersionsRequest()
	old.SetVersion(2) // not flexible: decoded inline
	good.roundTrip(old)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Close(ctx), "shutdown does not wait for the stuck decode")
	require.NoError(t, <-served)
	close(release) // let the abandoned decode finish, for goleak
}
