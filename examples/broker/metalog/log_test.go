package metalog

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLocalLogAppliesAtOnce(t *testing.T) {
	var got []*metadata.Record
	l, err := New(WithSelf(1), WithApplied(func(_, _ *metadata.Image, rec *metadata.Record) { got = append(got, rec) }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	leader, self := l.Leader()
	assert.Equal(t, int32(1), leader)
	assert.True(t, self, "a broker alone is its own controller")
	im, err := l.Propose(context.Background(), &metadata.Record{ClusterID: "c"})
	require.NoError(t, err)
	assert.Equal(t, "c", im.ClusterID)
	assert.Equal(t, uint64(1), im.Index)
	assert.Same(t, im, l.Image())
	assert.Len(t, got, 1, "the callback ran before Propose returned")
	require.NoError(t, l.Close())
	_, err = l.Propose(context.Background(), &metadata.Record{})
	assert.ErrorIs(t, err, ErrClosed)
}

// quorum is three logs on Raft's in-memory transport.
type quorum struct {
	logs []*Log
	mu   sync.Mutex
	seen map[int32]*metadata.Image // the last image each applied
}

func newQuorum(t *testing.T) *quorum {
	t.Helper()
	q := &quorum{seen: make(map[int32]*metadata.Image)}
	voters := make([]Voter, 3)
	trans := make([]*raft.InmemTransport, 3)
	for i := range trans {
		addr, tr := raft.NewInmemTransport("")
		trans[i] = tr
		voters[i] = Voter{ID: int32(i + 1), Addr: string(addr)}
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].Connect(trans[j].LocalAddr(), trans[j])
			}
		}
	}
	for i := range trans {
		id := int32(i + 1)
		l, err := New(WithSelf(id), WithVoters(voters), WithTransport(trans[i]), WithHeartbeatTimeout(50*time.Millisecond),
			WithApplied(func(_, after *metadata.Image, _ *metadata.Record) {
				q.mu.Lock()
				q.seen[id] = after
				q.mu.Unlock()
			}))
		require.NoError(t, err)
		q.logs = append(q.logs, l)
		t.Cleanup(func() { _ = l.Close() })
	}
	return q
}

// leader waits for a leader among the logs still open and returns it.
func (q *quorum) leader(t *testing.T, open []*Log) *Log {
	t.Helper()
	var found *Log
	require.Eventually(t, func() bool {
		for _, l := range open {
			if l.IsLeader() {
				found = l
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "a leader is elected")
	return found
}

func TestQuorumCommitsAndFailsOver(t *testing.T) {
	q := newQuorum(t)
	first := q.leader(t, q.logs)
	for _, l := range q.logs {
		if l != first {
			_, err := l.Propose(context.Background(), &metadata.Record{ClusterID: "x"})
			assert.ErrorIs(t, err, ErrNotLeader, "only the leader proposes")
		}
	}
	im, err := first.Propose(context.Background(), &metadata.Record{ClusterID: "c", Brokers: []metadata.Broker{{ID: 1, Epoch: 7}}})
	require.NoError(t, err)
	assert.Equal(t, "c", im.ClusterID)
	for _, l := range q.logs {
		require.Eventually(t, func() bool { return l.Image().ClusterID == "c" }, 10*time.Second, 5*time.Millisecond,
			"every voter applies the committed record")
	}

	// The leader goes: another voter takes over with the same image.
	require.NoError(t, first.Close())
	var rest []*Log
	for _, l := range q.logs {
		if l != first {
			rest = append(rest, l)
		}
	}
	second := q.leader(t, rest)
	require.NoError(t, second.Barrier(5*time.Second))
	im, err = second.Propose(context.Background(), &metadata.Record{Brokers: []metadata.Broker{{ID: 1, Fenced: true}}})
	require.NoError(t, err)
	assert.Equal(t, "c", im.ClusterID, "the new leader's image holds what the old one committed")
	assert.True(t, im.Fenced(1))
	for _, l := range rest {
		require.Eventually(t, func() bool { return l.Image().Fenced(1) }, 10*time.Second, 5*time.Millisecond)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, l := range rest {
		assert.Same(t, l.Image(), q.seen[l.cfg.self], "the callback saw each image applied")
	}
}

func TestDurableQuorumBootstrapsOnce(t *testing.T) {
	dir := t.TempDir()
	addr, tr := raft.NewInmemTransport("")
	voters := []Voter{{ID: 1, Addr: string(addr)}}
	l, err := New(WithSelf(1), WithVoters(voters), WithTransport(tr), WithDir(dir), WithHeartbeatTimeout(50*time.Millisecond))
	require.NoError(t, err)
	require.Eventually(t, l.IsLeader, 10*time.Second, 5*time.Millisecond, "a quorum of one elects itself")
	_, err = l.Propose(context.Background(), &metadata.Record{ClusterID: "kept"})
	require.NoError(t, err)
	require.NoError(t, l.Close())

	addr, tr = raft.NewInmemTransport(addr)
	l, err = New(WithSelf(1), WithVoters(voters), WithTransport(tr), WithDir(dir), WithHeartbeatTimeout(50*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	require.Eventually(t, l.IsLeader, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, l.Barrier(5*time.Second))
	assert.Equal(t, "kept", l.Image().ClusterID, "the log in the dir is replayed")
}
