package sharestate

import (
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// Log is where a coordinator keeps its states: in the broker, the
// partitions of __share_group_state it leads, through the coordinator
// runtime (its *coordinator.Topic, which Host gives it); in tests, a fake.
type Log interface {
	// PartitionOf returns the partition key belongs in, and whether this
	// broker has loaded it. Lock-free: called under the coordinator's
	// lock.
	PartitionOf(key string) (partition int32, loaded bool)
	// Append appends batch to key's partition and returns the wait for
	// its replication, which calls done exactly once, from any goroutine
	// (errors wrapping a *kerr.Error: NOT_COORDINATOR, REQUEST_TIMED_OUT,
	// COORDINATOR_NOT_AVAILABLE). An error means nothing was appended.
	// The coordinator calls Append with its lock held, and the wait with
	// none (coordinator.Topic.Append).
	Append(key string, batch []byte, minISR bool) (wait func(done func(error)), err error)
}

// Config is what a Coordinator is made of.
type Config struct {
	// Logger logs loads and failed writes (default: no-op).
	Logger *zap.Logger
	// Now is the wall clock of the records' timestamps (default:
	// time.Now).
	Now func() time.Time
}

// Coordinator is the share coordinator (Kafka's ShareCoordinatorShard, for
// every partition of __share_group_state this broker leads): the persisted
// state of each share partition whose key falls in a partition it has
// loaded. Its methods are safe for concurrent use.
//
// Lock order: the runtime's Topic.mu (around Load and Unload), then mu,
// then the runtime's compaction's and the storage partition's (inside
// Log.Append). A write's wait, and every done, runs with no lock held.
type Coordinator struct {
	log Log    // immutable
	cfg Config // immutable

	mu    sync.Mutex // guards the following
	parts map[int32]map[Key]*State
}

// New returns a coordinator of no partition yet, keeping its states in
// log.
func New(log Log, cfg Config) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Coordinator{log: log, cfg: cfg, parts: make(map[int32]map[Key]*State)}
}

// Load takes the states of partition idx, replayed (r), which this broker
// now leads at leader epoch epoch, and returns how many there are. The
// replay goes on following the partition for its compaction: its map is
// copied, its states shared (neither changes a State in place).
// O(states).
func (c *Coordinator) Load(idx, epoch int32, r *Replay) int {
	states := maps.Clone(r.Values())
	if states == nil {
		states = make(map[Key]*State)
	}
	c.mu.Lock()
	c.parts[idx] = states
	c.mu.Unlock()
	c.cfg.Logger.Info("loaded share-partition states", zap.Int32("partition", idx),
		zap.Int32("leader_epoch", epoch), zap.Int("share_partitions", len(states)))
	return len(states)
}

// Unload forgets the states of partition idx, no longer led here, and
// returns how many it forgot. Nothing waits on them but writes, whose
// appends answer NOT_COORDINATOR themselves.
func (c *Coordinator) Unload(idx int32) int {
	c.mu.Lock()
	n := len(c.parts[idx])
	delete(c.parts, idx)
	c.mu.Unlock()
	return n
}

// statesLocked returns the states of k's partition, or NOT_COORDINATOR
// when it is not loaded here.
//
// REQUIRES: c.mu held.
func (c *Coordinator) statesLocked(k Key) (map[Key]*State, error) {
	idx, loaded := c.log.PartitionOf(k.String())
	states := c.parts[idx]
	if !loaded || states == nil {
		return nil, fmt.Errorf("%w: %s's partition %d is not loaded here", kerr.NotCoordinator, k, idx)
	}
	return states, nil
}

// putLocked appends k's new state st (nil: a tombstone) and, once
// appended, makes it k's state in states; it returns the wait for the
// append's replication.
//
// REQUIRES: c.mu held.
func (c *Coordinator) putLocked(states map[Key]*State, k Key, st *State) (func(func(error)), error) {
	wait, err := c.log.Append(k.String(), encodeBatch(c.cfg.Now(), record(k, st)), true)
	if err != nil {
		c.cfg.Logger.Debug("a share-state write failed", zap.Stringer("key", k), zap.Error(err))
		return nil, err
	}
	if st == nil {
		delete(states, k)
	} else {
		states[k] = st
	}
	return wait, nil
}
