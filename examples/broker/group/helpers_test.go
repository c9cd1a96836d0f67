package group

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
	"github.com/gopurgatory/purgatory/timer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testSession   = 10 * time.Second
	testRebalance = 20 * time.Second
	testDelay     = 3 * time.Second // Kafka's initial rebalance delay
)

// newTestCoordinator returns a coordinator on a manual clock, closed at the
// end of the test: every deadline expires inside clk.Advance.
func newTestCoordinator(t *testing.T, opts ...Option) (*Coordinator, *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(0)
	base := []Option{WithClock(clk), WithInitialRebalanceDelay(testDelay), WithSessionTimeouts(time.Second, time.Hour)}
	c, err := New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c, clk
}

// answers records what a request was answered, to check it was answered
// exactly once.
type answers[T any] struct {
	mu  sync.Mutex
	got []T
}

func (a *answers[T]) respond(v T) {
	a.mu.Lock()
	a.got = append(a.got, v)
	a.mu.Unlock()
}

func (a *answers[T]) n() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.got)
}

// first returns the first answer, if any.
func (a *answers[T]) first() (T, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var zero T
	if len(a.got) == 0 {
		return zero, false
	}
	return a.got[0], true
}

// one returns the answer, failing unless there is exactly one.
func (a *answers[T]) one(t *testing.T) T {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.Len(t, a.got, 1, "answered exactly once")
	return a.got[0]
}

func protocols(names ...string) []Protocol {
	ps := make([]Protocol, len(names))
	for i, n := range names {
		ps[i] = Protocol{Name: n, Metadata: []byte("meta-" + n)}
	}
	return ps
}

// joinReq is a consumer's JoinGroup for group, supporting protocols in
// order (range alone if none).
func joinReq(group, member string, protos ...string) JoinRequest {
	if len(protos) == 0 {
		protos = []string{"range"}
	}
	return JoinRequest{
		Group: group, MemberID: member, ClientID: "client", ClientHost: "/127.0.0.1",
		ProtocolType: "consumer", Protocols: protocols(protos...),
		SessionTimeout: testSession, RebalanceTimeout: testRebalance,
	}
}

func join(c *Coordinator, req JoinRequest) *answers[JoinResult] {
	a := new(answers[JoinResult])
	c.JoinGroup(req, a.respond, nil)
	return a
}

func syncGroup(c *Coordinator, req SyncRequest) *answers[SyncResult] {
	a := new(answers[SyncResult])
	c.SyncGroup(req, a.respond)
	return a
}

func heartbeat(c *Coordinator, group string, r JoinResult) *kerr.Error {
	return c.Heartbeat(HeartbeatRequest{Group: group, MemberID: r.MemberID, Generation: r.Generation})
}

// state returns group's state and member ids (in join order).
func state(t *testing.T, c *Coordinator, group string) (State, []string) {
	t.Helper()
	d, _, err := c.DescribeGroup(group)
	require.Nil(t, err)
	var ids []string
	for _, m := range d.Members {
		ids = append(ids, m.MemberID)
	}
	return d.State, ids
}

// assignment is what the leader assigns member id in these tests.
func assignment(id string) []byte { return []byte("assigned-to-" + id) }

// stableGroup forms a Stable group of n dynamic members, joined in order,
// and returns their JoinGroup answers (the leader's first).
func stableGroup(t *testing.T, c *Coordinator, clk *timer.ManualClock, group string, n int) []JoinResult {
	t.Helper()
	pending := make([]*answers[JoinResult], n)
	for i := range pending {
		pending[i] = join(c, joinReq(group, ""))
	}
	// Members joining during the initial delay extend it once each delay.
	for range 2 {
		clk.Advance(testDelay)
	}
	res := make([]JoinResult, n)
	for i, p := range pending {
		res[i] = p.one(t)
		require.Nil(t, res[i].Err)
	}
	syncAll(t, c, group, res)
	st, _ := state(t, c, group)
	require.Equal(t, Stable, st)
	return res
}

// syncAll sends every member's SyncGroup, the leader's last, and checks
// each gets its assignment.
func syncAll(t *testing.T, c *Coordinator, group string, res []JoinResult) {
	t.Helper()
	leader := slices.IndexFunc(res, func(r JoinResult) bool { return r.MemberID == r.Leader })
	require.GreaterOrEqual(t, leader, 0, "one member leads")
	syncs := make([]*answers[SyncResult], len(res))
	for i, r := range res {
		if i == leader {
			continue
		}
		syncs[i] = syncGroup(c, SyncRequest{Group: group, MemberID: r.MemberID, Generation: r.Generation})
		require.Zero(t, syncs[i].n(), "a follower's SyncGroup waits for the leader's")
	}
	var plan []Assignment
	for _, m := range res[leader].Members {
		plan = append(plan, Assignment{MemberID: m.MemberID, Assignment: assignment(m.MemberID)})
	}
	r := res[leader]
	syncs[leader] = syncGroup(c, SyncRequest{Group: group, MemberID: r.MemberID, Generation: r.Generation, Assignments: plan})
	for i, r := range res {
		got := syncs[i].one(t)
		require.Nil(t, got.Err, "member %d", i)
		assert.Equal(t, assignment(r.MemberID), got.Assignment, "member %d gets its own assignment", i)
	}
}

// testWaiter submits directly and keeps the operations, so that a test
// can act as a connection that goes away.
type testWaiter struct {
	mu  sync.Mutex
	ops []operation.Operation
}

func (w *testWaiter) Wait(p *purgatory.Purgatory[RebalanceKey], op operation.Operation, timeout time.Duration, keys []RebalanceKey) error {
	w.mu.Lock()
	w.ops = append(w.ops, op)
	w.mu.Unlock()
	_, err := p.TryCompleteElseWatch(op, timeout, keys...)
	return err
}

// disconnect force-completes every operation still waiting, as a closed
// connection does, and forgets them all.
func (w *testWaiter) disconnect() int {
	w.mu.Lock()
	ops := w.ops
	w.ops = nil
	w.mu.Unlock()
	n := 0
	for _, op := range ops {
		if op.OperationState().ForceComplete() {
			n++
		}
	}
	return n
}

func ids(res []JoinResult) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.MemberID
	}
	return out
}

func memberIDs(ms []JoinMember) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.MemberID
	}
	return out
}

// commitNow commits req and returns the answer, which must come before
// CommitOffsets returns: no store, or one whose commits are durable at
// once.
func commitNow(t *testing.T, c *Coordinator, req CommitRequest) []*kerr.Error {
	t.Helper()
	var got []*kerr.Error
	answered := false
	c.CommitOffsets(req, func(errs []*kerr.Error) { got, answered = errs, true })
	require.True(t, answered, "the commit was answered at once")
	return got
}
