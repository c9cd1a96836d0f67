package sharegroup

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/timer"
)

var (
	topicA = TopicInfo{ID: [16]byte{0xa}, Partitions: 3}
	topicB = TopicInfo{ID: [16]byte{0xb}, Partitions: 1}
)

type harness struct {
	c   *Coordinator
	tm  *timer.Timer
	clk *timer.ManualClock

	mu     sync.Mutex
	topics map[string]TopicInfo
	left   []string
}

func newHarness(t *testing.T, opts ...func(*Config)) *harness {
	t.Helper()
	h := &harness{clk: timer.NewManualClock(0), topics: map[string]TopicInfo{"a": topicA, "b": topicB}}
	tm, err := timer.New(timer.WithClock(h.clk), timer.WithWorkers(0), timer.WithAutoAdvance(false))
	require.NoError(t, err)
	t.Cleanup(func() { tm.Close() })
	h.tm = tm
	cfg := Config{Timer: tm,
		Topic: func(name string) (TopicInfo, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			info, ok := h.topics[name]
			return info, ok
		},
		Left: func(group, member string) {
			h.mu.Lock()
			h.left = append(h.left, group+"/"+member)
			h.mu.Unlock()
		}}
	for _, o := range opts {
		o(&cfg)
	}
	h.c, err = New(cfg)
	require.NoError(t, err)
	t.Cleanup(h.c.Close)
	return h
}

func (h *harness) advance(d time.Duration) {
	h.clk.Advance(d)
	h.tm.AdvanceClock(context.Background(), 0)
}

// heartbeat runs a heartbeat whose answer comes at once: the harness's
// store, if any, makes each change durable as it is appended.
func (h *harness) heartbeat(req HeartbeatRequest) (HeartbeatResponse, error) {
	var (
		resp     HeartbeatResponse
		err      error
		answered bool
	)
	h.c.Heartbeat(req, func(r HeartbeatResponse, e error) { resp, err, answered = r, e, true })
	if !answered {
		panic("a heartbeat not answered at once")
	}
	return resp, err
}

func (h *harness) join(t *testing.T, id string, topics ...string) HeartbeatResponse {
	t.Helper()
	resp, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: id, Topics: topics})
	require.NoError(t, err)
	return resp
}

func TestJoinAssignsEverySubscribedPartition(t *testing.T) {
	h := newHarness(t)
	resp := h.join(t, "m1", "a", "b")
	assert.Equal(t, int32(1), resp.Epoch, "the first join bumps the group epoch to 1")
	assert.Equal(t, Assignment{topicA.ID: {0, 1, 2}, topicB.ID: {0}}, resp.Assignment)

	resp, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: 1})
	require.NoError(t, err)
	assert.Nil(t, resp.Assignment, "an unchanged assignment is not sent again")
}

func TestMembersShareSmallTopics(t *testing.T) {
	h := newHarness(t)
	h.join(t, "m1", "a", "b")
	h.join(t, "m2", "a", "b")
	h.join(t, "m3", "a", "b")
	r4 := h.join(t, "m4", "a", "b")
	assert.Equal(t, int32(4), r4.Epoch)
	assert.Equal(t, Assignment{topicA.ID: {0}, topicB.ID: {0}}, r4.Assignment, "four members, three partitions: m4 shares partition 0")

	resp, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: 1})
	require.NoError(t, err)
	assert.Equal(t, int32(4), resp.Epoch, "a member behind takes the group epoch")
	assert.Equal(t, Assignment{topicA.ID: {0}, topicB.ID: {0}}, resp.Assignment, "with its new assignment")
	resp, err = h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m2", Epoch: 2})
	require.NoError(t, err)
	assert.Equal(t, Assignment{topicA.ID: {1}, topicB.ID: {0}}, resp.Assignment)
}

func TestFewerMembersThanPartitions(t *testing.T) {
	h := newHarness(t)
	h.join(t, "m1", "a")
	r2 := h.join(t, "m2", "a")
	assert.Equal(t, Assignment{topicA.ID: {1}}, r2.Assignment)
	resp, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: 1})
	require.NoError(t, err)
	assert.Equal(t, Assignment{topicA.ID: {0, 2}}, resp.Assignment)
}

func TestEpochErrors(t *testing.T) {
	h := newHarness(t)
	h.join(t, "m1", "a")
	_, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "nobody", Epoch: 1})
	assert.ErrorIs(t, err, ErrUnknownMember)
	_, err = h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: 7})
	assert.ErrorIs(t, err, ErrFencedMemberEpoch)
	_, err = h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m2"})
	assert.ErrorIs(t, err, ErrInvalidRequest, "a join without a subscription")
}

func TestLeaveAndSessionExpiry(t *testing.T) {
	h := newHarness(t)
	h.join(t, "m1", "a")
	h.join(t, "m2", "a")
	resp, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: -1})
	require.NoError(t, err)
	assert.Equal(t, int32(-1), resp.Epoch)
	d, ok := h.c.Describe("g")
	require.True(t, ok)
	assert.Equal(t, int32(3), d.Epoch, "a leave bumps the group epoch")
	require.Len(t, d.Members, 1)

	h.advance(DefaultSessionTimeout - time.Millisecond)
	_, ok = h.c.Describe("g")
	require.True(t, ok)
	resp, err = h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m2", Epoch: 2})
	require.NoError(t, err, "m2 heartbeats before its session ends")
	assert.Equal(t, Assignment{topicA.ID: {0, 1, 2}}, resp.Assignment, "m2 alone gets every partition")
	h.advance(DefaultSessionTimeout - time.Millisecond)
	d, _ = h.c.Describe("g")
	assert.Len(t, d.Members, 1, "the heartbeat restarted the session")
	h.advance(time.Millisecond)
	d, _ = h.c.Describe("g")
	assert.Empty(t, d.Members, "expired")
	assert.Equal(t, "Empty", d.State)
	h.mu.Lock()
	assert.Equal(t, []string{"g/m1", "g/m2"}, h.left, "both departures are told")
	h.mu.Unlock()
	found, deleted := h.c.Delete("g")
	assert.True(t, found && deleted)
	assert.False(t, h.c.Exists("g"))
}

// TestAGroupsOwnTimeouts: a group whose share.session.timeout.ms and
// share.heartbeat.interval.ms are set (Config.Timeouts) has its members
// told its interval and expired after its session timeout; another group
// keeps the Coordinator's.
func TestAGroupsOwnTimeouts(t *testing.T) {
	h := newHarness(t, func(cfg *Config) {
		cfg.Timeouts = func(group string) (time.Duration, time.Duration) {
			if group == "g" {
				return 50 * time.Second, 7 * time.Second
			}
			return 0, 0 // the Coordinator's
		}
	})
	resp := h.join(t, "m1", "a")
	assert.Equal(t, 7*time.Second, resp.HeartbeatInterval, "the group's own interval")
	other, err := h.heartbeat(HeartbeatRequest{Group: "h", MemberID: "n1", Topics: []string{"a"}})
	require.NoError(t, err)
	assert.Equal(t, DefaultHeartbeatInterval, other.HeartbeatInterval, "another group's: the Coordinator's")

	h.advance(DefaultSessionTimeout)
	d, _ := h.c.Describe("h")
	assert.Empty(t, d.Members, "h's member expired after the Coordinator's timeout")
	d, _ = h.c.Describe("g")
	assert.Len(t, d.Members, 1, "g's did not: its timeout is 50s")
	h.advance(50*time.Second - DefaultSessionTimeout)
	d, _ = h.c.Describe("g")
	assert.Empty(t, d.Members, "expired after the group's own timeout")
}

func TestNewPartitionsBumpTheEpoch(t *testing.T) {
	h := newHarness(t)
	r := h.join(t, "m1", "a", "later")
	h.mu.Lock()
	h.topics["later"] = TopicInfo{ID: [16]byte{0xc}, Partitions: 2}
	h.mu.Unlock()
	resp, err := h.heartbeat(HeartbeatRequest{Group: "g", MemberID: "m1", Epoch: r.Epoch})
	require.NoError(t, err)
	assert.Equal(t, r.Epoch+1, resp.Epoch, "a subscribed topic appearing bumps the epoch")
	assert.Equal(t, []int32{0, 1}, resp.Assignment[[16]byte{0xc}])
}

func TestEnsureMakesAnEmptyGroup(t *testing.T) {
	h := newHarness(t)
	assert.True(t, h.c.Ensure("g"), "made, empty")
	d, ok := h.c.Describe("g")
	require.True(t, ok)
	assert.Equal(t, "Empty", d.State)
	h.join(t, "m1", "a")
	assert.False(t, h.c.Ensure("g"), "it has a member now")
}
