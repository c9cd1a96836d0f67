package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/metalog"
	"github.com/gopurgatory/purgatory/timer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testSession = 9 * time.Second

// newActive returns an active controller of brokers 1 to 3 over a local
// log, its sessions on a manual clock.
func newActive(t *testing.T, opts ...Option) (*Controller, *metalog.Log, *timer.ManualClock) {
	t.Helper()
	log, err := metalog.New(metalog.WithSelf(1))
	require.NoError(t, err)
	clk := timer.NewManualClock(0)
	c, err := New(log, []int32{3, 1, 2}, append([]Option{WithClock(clk), WithSessionTimeout(testSession), WithClusterID("test")}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.Close())
		require.NoError(t, log.Close())
	})
	c.LeaderChanged(1, true)
	c.wg.Wait() // the activation
	require.True(t, c.IsActive())
	assert.Equal(t, "test", log.Image().ClusterID, "the first controller commits the cluster id")
	return c, log, clk
}

func heartbeat(t *testing.T, c *Controller, broker int32, epoch int64) {
	t.Helper()
	require.NoError(t, c.Heartbeat(context.Background(), broker, epoch))
}

// advance moves the clock and waits for the fencing it started.
func advance(c *Controller, clk *timer.ManualClock, d time.Duration) {
	clk.Advance(d)
	c.wg.Wait()
}

// keepAliveUntilJustBefore heartbeats brokers 2 and 3 (with their epochs)
// every 2s while broker 1 stays silent, then moves the clock to 1ms
// before a session that started at start would expire.
func keepAliveUntilJustBefore(t *testing.T, c *Controller, clk *timer.ManualClock, start time.Duration, epoch2, epoch3 int64) {
	t.Helper()
	for clk.Now()+2*time.Second < start+testSession {
		advance(c, clk, 2*time.Second)
		heartbeat(t, c, 2, epoch2)
		heartbeat(t, c, 3, epoch3)
	}
	advance(c, clk, start+testSession-time.Millisecond-clk.Now())
}

func TestSessionExpiryFencesAndElects(t *testing.T) {
	c, log, clk := newActive(t)
	for id := int32(1); id <= 3; id++ {
		heartbeat(t, c, id, 100+int64(id))
	}
	top, err := c.CreateTopic(context.Background(), TopicSpec{Name: "a", Partitions: 3, ReplicationFactor: 3})
	require.NoError(t, err)
	_, err = c.CreateTopic(context.Background(), TopicSpec{Name: "a", Partitions: 1, ReplicationFactor: 1})
	assert.ErrorIs(t, err, metadata.ErrTopicExists)

	// Brokers 2 and 3 heartbeat every 2s; broker 1 goes silent.
	keepAliveUntilJustBefore(t, c, clk, clk.Now(), 102, 103)
	assert.False(t, log.Image().Fenced(1), "not before the session timeout")

	advance(c, clk, time.Millisecond)
	im := log.Image()
	require.True(t, im.Fenced(1), "fenced at the session timeout")
	p0, err := im.Partition(top.ID, 0)
	require.NoError(t, err)
	assert.Equal(t, int32(2), p0.Leader, "a new leader from the ISR")
	assert.Equal(t, int32(1), p0.LeaderEpoch)
	assert.Equal(t, []int32{2, 3}, p0.ISR)

	// Broker 1 restarts: registered again, out of every ISR.
	heartbeat(t, c, 1, 201)
	im = log.Image()
	assert.False(t, im.Fenced(1))
	p0, _ = im.Partition(top.ID, 0)
	assert.Equal(t, []int32{2, 3}, p0.ISR, "it rejoins an ISR only through its leader")

	// Its leader adds it back once it has caught up.
	p, err := c.AlterPartition(context.Background(), top.ID, 0, 2, p0.LeaderEpoch, p0.PartitionEpoch, []int32{1, 2, 3})
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 3}, p.ISR)
	_, err = c.AlterPartition(context.Background(), top.ID, 0, 2, p0.LeaderEpoch, p0.PartitionEpoch, []int32{2})
	assert.ErrorIs(t, err, metadata.ErrStalePartitionEpoch, "a change made against an old partition epoch")
}

func TestEveryBrokerGetsASessionAtElection(t *testing.T) {
	c, log, clk := newActive(t)
	heartbeat(t, c, 1, 1)
	advance(c, clk, testSession-time.Millisecond)
	heartbeat(t, c, 1, 1)
	advance(c, clk, time.Millisecond)
	im := log.Image()
	assert.True(t, im.Fenced(2), "a broker that never heartbeats the new controller is fenced")
	assert.True(t, im.Fenced(3))
	assert.False(t, im.Fenced(1))
}

// No heartbeat here: the local log always leads, so a refused heartbeat
// would activate the controller again (TestHeartbeatActivatesAnIdleLeader);
// a quorum's log that stopped leading does not.
func TestInactiveControllerDecidesNothing(t *testing.T) {
	c, log, clk := newActive(t)
	heartbeat(t, c, 2, 2)
	c.LeaderChanged(2, false)
	assert.False(t, c.IsActive())
	_, err := c.CreateTopic(context.Background(), TopicSpec{Name: "a", Partitions: 1, ReplicationFactor: 1})
	assert.ErrorIs(t, err, ErrNotController)
	advance(c, clk, 2*testSession)
	assert.False(t, log.Image().Fenced(2), "its sessions were dropped, not expired")
	assert.False(t, c.IsActive())
}

func TestControlledShutdownMovesLeadershipAtOnce(t *testing.T) {
	c, log, clk := newActive(t)
	for id := int32(1); id <= 3; id++ {
		heartbeat(t, c, id, int64(id))
	}
	top, err := c.CreateTopic(context.Background(), TopicSpec{Name: "a", Partitions: 1, ReplicationFactor: 3})
	require.NoError(t, err)
	require.NoError(t, c.Shutdown(context.Background(), 1, 999), "a stale epoch")
	assert.False(t, log.Image().Fenced(1), "changes nothing")

	require.NoError(t, c.Shutdown(context.Background(), 1, 1))
	im := log.Image()
	assert.True(t, im.Fenced(1), "fenced at once, no session timeout")
	p, err := im.Partition(top.ID, 0)
	require.NoError(t, err)
	assert.Equal(t, int32(2), p.Leader)
	assert.Equal(t, []int32{2, 3}, p.ISR)

	for range 4 {
		advance(c, clk, testSession/2)
		heartbeat(t, c, 2, 2)
		heartbeat(t, c, 3, 3)
	}
	assert.False(t, log.Image().Fenced(2), "the others' sessions go on")
	assert.True(t, log.Image().Fenced(1), "its session ended: nothing expires for it")
}

// A session lost without fencing its broker (its expiry's decision
// failed) is started again by the next heartbeat of any broker, so the
// dead broker is still fenced, a session timeout later.
func TestLostSessionIsResumed(t *testing.T) {
	c, log, clk := newActive(t)
	for id := int32(1); id <= 3; id++ {
		heartbeat(t, c, id, int64(id))
	}
	c.mu.Lock()
	lost := c.sessions[1]
	delete(c.sessions, 1) // as expire leaves it when fence fails
	c.mu.Unlock()
	lost.dropped.Store(true)
	lost.ForceComplete()

	heartbeat(t, c, 2, 2)
	keepAliveUntilJustBefore(t, c, clk, clk.Now(), 2, 3)
	assert.False(t, log.Image().Fenced(1), "a fresh session: not before its full timeout")
	advance(c, clk, time.Millisecond)
	assert.True(t, log.Image().Fenced(1), "fenced once the resumed session expires")
	assert.False(t, log.Image().Fenced(2))
}

// A controller whose log leads the quorum but that was never told so (a
// missed leadership observation) is activated by the first heartbeat it
// refuses, and the broker's next heartbeat succeeds.
func TestHeartbeatActivatesAnIdleLeader(t *testing.T) {
	log, err := metalog.New(metalog.WithSelf(1))
	require.NoError(t, err)
	c, err := New(log, []int32{1, 2, 3}, WithClock(timer.NewManualClock(0)), WithSessionTimeout(testSession))
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, c.Close())
		require.NoError(t, log.Close())
	})
	require.True(t, log.IsLeader(), "a local log leads")
	assert.ErrorIs(t, c.Heartbeat(context.Background(), 2, 2), ErrNotController)
	c.wg.Wait() // the activation it started
	assert.True(t, c.IsActive())
	heartbeat(t, c, 2, 2)
	assert.False(t, log.Image().Fenced(2))
}

// newActiveAfter is newActive for a controller that succeeds prev, silent
// to it for silent when it takes office.
func newActiveAfter(t *testing.T, prev int32, silent time.Duration) (*Controller, *metalog.Log, *timer.ManualClock) {
	t.Helper()
	log, err := metalog.New(metalog.WithSelf(1))
	require.NoError(t, err)
	clk := timer.NewManualClock(0)
	c, err := New(log, []int32{1, 2, 3}, WithClock(clk), WithSessionTimeout(testSession),
		WithHeartbeatInterval(2*time.Second), WithClusterID("test"))
	require.NoError(t, err)
	c.prevLeader = func() (int32, time.Duration, bool) { return prev, silent, true }
	t.Cleanup(func() {
		require.NoError(t, c.Close())
		require.NoError(t, log.Close())
	})
	// Registered before this controller's term, as the old one left them.
	_, err = log.Propose(context.Background(), &metadata.Record{Brokers: []metadata.Broker{{ID: 1, Epoch: 101}, {ID: 2, Epoch: 102}, {ID: 3, Epoch: 103}}})
	require.NoError(t, err)
	c.LeaderChanged(1, true)
	c.wg.Wait()
	require.True(t, c.IsActive())
	return c, log, clk
}

// TestPreviousControllerSessionCountsFromItsSilence: the broker that led
// the quorum before this controller gets what is left of a session from
// its last word to this broker, at least two heartbeat intervals; the
// others a whole session, as Kafka's new controller gives them.
func TestPreviousControllerSessionCountsFromItsSilence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		silent time.Duration
		fenced time.Duration // after activation
	}{
		{"what is left of its session", 3 * time.Second, 6 * time.Second},
		{"at least two heartbeats", 8 * time.Second, 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, log, clk := newActiveAfter(t, 2, tc.silent)
			alive := func(until time.Duration) {
				for clk.Now() < until {
					advance(c, clk, min(time.Second, until-clk.Now()))
					heartbeat(t, c, 1, 101)
					heartbeat(t, c, 3, 103)
				}
			}
			alive(tc.fenced - time.Millisecond)
			assert.False(t, log.Image().Fenced(2), "not before")
			advance(c, clk, time.Millisecond)
			assert.True(t, log.Image().Fenced(2), "fenced once what was left of its session passed")
			assert.False(t, log.Image().Fenced(3), "the others keep a whole session")
		})
	}
}

// TestPreviousControllerThatHeartbeatsIsKept: a previous controller that
// is alive heartbeats the new one, and keeps its session.
func TestPreviousControllerThatHeartbeatsIsKept(t *testing.T) {
	c, log, clk := newActiveAfter(t, 2, 8*time.Second)
	for range 10 {
		advance(c, clk, 2*time.Second)
		for id := int32(1); id <= 3; id++ {
			heartbeat(t, c, id, 100+int64(id))
		}
	}
	assert.False(t, log.Image().Fenced(2))
}
