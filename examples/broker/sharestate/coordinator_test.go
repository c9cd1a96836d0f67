package sharestate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeLog is one partition, loaded, holding every batch appended; its
// waits are answered when release is called.
type fakeLog struct {
	loaded  bool
	batches [][]byte
	waiting []func(error)
}

func (f *fakeLog) PartitionOf(string) (int32, bool) { return 0, f.loaded }

func (f *fakeLog) Append(_ string, batch []byte, _ bool) (func(func(error)), error) {
	if !f.loaded {
		return nil, kerr.NotCoordinator
	}
	f.batches = append(f.batches, batch)
	return func(done func(error)) { f.waiting = append(f.waiting, done) }, nil
}

// release answers the waits: replicated.
func (f *fakeLog) release() {
	w := f.waiting
	f.waiting = nil
	for _, done := range w {
		done(nil)
	}
}

// replay returns the log replayed.
func (f *fakeLog) replay(t *testing.T) *Replay {
	t.Helper()
	r := &Replay{}
	for _, b := range f.batches {
		_, err := r.Apply(b)
		require.NoError(t, err)
	}
	return r
}

func newTestCoordinator(t *testing.T) (*Coordinator, *fakeLog) {
	t.Helper()
	log := &fakeLog{loaded: true}
	c := New(log, Config{})
	c.Load(0, 1, &Replay{})
	return c, log
}

// errOf records what done got.
func errOf(got *error, called *bool) func(error) {
	return func(err error) { *got, *called = err, true }
}

func TestCoordinatorAnswersOnceReplicated(t *testing.T) {
	c, log := newTestCoordinator(t)
	var err error
	var called bool
	c.Initialize(keyA, 0, 10, errOf(&err, &called))
	assert.False(t, called, "answered only once replicated")
	log.release()
	require.True(t, called)
	require.NoError(t, err)

	var read State
	c.Read(keyA, 5, func(st State, e error) { read, err, called = st, e, true })
	called = false
	c.Read(keyA, 5, func(st State, e error) { read, err, called = st, e, true })
	assert.True(t, called, "the leader epoch already stored: answered at once")
	assert.Equal(t, State{StateEpoch: 0, LeaderEpoch: 5, StartOffset: 10}, read)
	log.release()
}

func TestCoordinatorFences(t *testing.T) {
	c, log := newTestCoordinator(t)
	var err error
	var called bool
	c.Initialize(keyA, 2, 0, errOf(&err, &called))
	log.release()
	c.Read(keyA, 7, func(_ State, e error) { err = e })
	log.release()
	require.NoError(t, err)

	tests := []struct {
		name string
		st   State
		want *kerr.Error
	}{
		{"an older leader", State{StateEpoch: 2, LeaderEpoch: 6, StartOffset: 3}, kerr.FencedLeaderEpoch},
		{"an older state epoch", State{StateEpoch: 1, LeaderEpoch: 7, StartOffset: 3}, kerr.FencedStateEpoch},
		{"the current leader", State{StateEpoch: 2, LeaderEpoch: 7, StartOffset: 3}, nil},
		{"no leader epoch keeps it", State{StateEpoch: 2, LeaderEpoch: -1, StartOffset: 4}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called = false
			c.Write(keyA, tt.st, errOf(&err, &called))
			log.release()
			require.True(t, called)
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.want)
			}
		})
	}
	sum, err := c.Summary(keyA)
	require.NoError(t, err)
	assert.Equal(t, State{StateEpoch: 2, LeaderEpoch: 7, StartOffset: 4}, sum)

	c.Read(keyA, 6, func(_ State, e error) { err = e })
	assert.ErrorIs(t, err, kerr.FencedLeaderEpoch, "a read by an older leader")
	c.Initialize(keyA, 1, 0, errOf(&err, &called))
	assert.ErrorIs(t, err, kerr.FencedStateEpoch)
}

// TestCoordinatorRecovers replays the log of one coordinator into another,
// as a new leader of the partition loads it: the same states, a deleted
// one gone.
func TestCoordinatorRecovers(t *testing.T) {
	c, log := newTestCoordinator(t)
	var err error
	var called bool
	c.Initialize(keyA, 0, 0, errOf(&err, &called))
	c.Initialize(keyB, 0, 0, errOf(&err, &called))
	want := State{StateEpoch: 0, LeaderEpoch: 3, StartOffset: 4, Batches: []Batch{{First: 4, Last: 6, DeliveryState: 1, DeliveryCount: 2}}}
	c.Write(keyA, want, errOf(&err, &called))
	c.Delete(keyB, errOf(&err, &called))
	log.release()
	require.NoError(t, err)

	other := New(log, Config{})
	assert.Equal(t, 1, other.Load(0, 2, log.replay(t)))
	var got State
	other.Read(keyA, 3, func(st State, e error) { got, err = st, e })
	require.NoError(t, err)
	assert.Equal(t, want, got)
	other.Read(keyB, 3, func(st State, e error) { got, err = st, e })
	assert.Equal(t, int64(-1), got.StartOffset, "deleted: never initialized")

	assert.Equal(t, 1, other.Unload(0))
	log.loaded = false
	other.Read(keyA, 3, func(_ State, e error) { err = e })
	assert.ErrorIs(t, err, kerr.NotCoordinator)
}
