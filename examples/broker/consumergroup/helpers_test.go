package consumergroup

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/goleak"

	"github.com/gopurgatory/purgatory/timer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testSession   = 10 * time.Second
	testHeartbeat = time.Second
	testRebalance = 30 * time.Second
)

// fakeTopics is a cluster's topics a test changes.
type fakeTopics struct {
	mu      sync.Mutex
	version uint64
	byName  map[string]TopicMeta
}

func newFakeTopics() *fakeTopics { return &fakeTopics{byName: map[string]TopicMeta{}} }

// set creates topic name with n partitions, or grows it.
func (f *fakeTopics) set(name string, n int32) TopicMeta {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.byName[name]
	if !ok {
		t = TopicMeta{Name: name}
		copy(t.ID[:], name)
		t.ID[15] = byte(len(f.byName) + 1)
	}
	t.Partitions = n
	f.byName[name] = t
	f.version++
	return t
}

func (f *fakeTopics) snapshot() Topics {
	f.mu.Lock()
	defer f.mu.Unlock()
	return staticTopics{version: f.version, byName: func() map[string]TopicMeta {
		m := make(map[string]TopicMeta, len(f.byName))
		for k, v := range f.byName {
			m[k] = v
		}
		return m
	}()}
}

type staticTopics struct {
	version uint64
	byName  map[string]TopicMeta
}

func (s staticTopics) Version() uint64                     { return s.version }
func (s staticTopics) Topic(name string) (TopicMeta, bool) { t, ok := s.byName[name]; return t, ok }
func (s staticTopics) Names() []string {
	var out []string
	for n := range s.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
func (s staticTopics) ByID(id TopicID) (TopicMeta, bool) {
	for _, t := range s.byName {
		if t.ID == id {
			return t, true
		}
	}
	return TopicMeta{}, false
}

// newTestCoordinator returns a coordinator on a manual clock over topics,
// closed at the end of the test.
func newTestCoordinator(t *testing.T, topics *fakeTopics, opts ...Option) (*Coordinator, *timer.ManualClock) {
	t.Helper()
	clk := timer.NewManualClock(0)
	base := []Option{WithClock(clk), WithSessionTimeout(testSession), WithHeartbeatInterval(testHeartbeat),
		WithTopics(topics.snapshot)}
	c, err := New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c, clk
}

// join is a member's first heartbeat, subscribing to topics.
func join(t *testing.T, c *Coordinator, group, member string, topics ...string) HeartbeatResponse {
	t.Helper()
	resp, err, msg := heartbeat(c, HeartbeatRequest{Version: 1, Group: group, MemberID: member, MemberEpoch: JoinEpoch,
		RebalanceTimeout: int32(testRebalance / time.Millisecond), SubscribedNames: topics, Owned: Assignment{}})
	require.Nil(t, err, msg)
	return resp
}

// beat is a full heartbeat saying the member owns owned at epoch.
func beat(t *testing.T, c *Coordinator, group, member string, epoch int32, owned Assignment) (HeartbeatResponse, *kerr.Error) {
	t.Helper()
	if owned == nil {
		owned = Assignment{}
	}
	resp, err, _ := heartbeat(c, HeartbeatRequest{Version: 1, Group: group, MemberID: member, MemberEpoch: epoch,
		RebalanceTimeout: -1, Owned: owned})
	return resp, err
}

// keepAlive is a heartbeat that says nothing but the member's epoch.
func keepAlive(t *testing.T, c *Coordinator, group, member string, epoch int32) (HeartbeatResponse, *kerr.Error) {
	t.Helper()
	resp, err, _ := heartbeat(c, HeartbeatRequest{Version: 1, Group: group, MemberID: member, MemberEpoch: epoch, RebalanceTimeout: -1})
	return resp, err
}

// parts builds an assignment of topic t.
func parts(t TopicMeta, ps ...int32) Assignment {
	if len(ps) == 0 {
		return Assignment{}
	}
	return Assignment{t.ID: ps}
}

// heartbeat runs req and returns its answer, which a coordinator whose
// store completes its waits at once (or that has none) gives before
// Heartbeat returns.
func heartbeat(c *Coordinator, req HeartbeatRequest) (HeartbeatResponse, *kerr.Error, string) {
	var (
		resp     HeartbeatResponse
		err      *kerr.Error
		msg      string
		answered bool
	)
	c.Heartbeat(req, func(r HeartbeatResponse, e *kerr.Error, m string) { resp, err, msg, answered = r, e, m, true })
	if !answered {
		panic("heartbeat not answered at once")
	}
	return resp, err, msg
}
