package txn

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestInitProducerIDNewID: a new id gets a new producer id at epoch 0,
// answered once its Empty record is written.
func TestInitProducerIDNewID(t *testing.T) {
	e := newEnv(t, 0)
	e.log.setHold(true)
	a := e.init("tx", -1, -1)
	assert.Zero(t, a.n(), "answered once written, not before")
	require.Equal(t, 1, e.log.release(nil))
	r := a.one(t)
	require.Nil(t, r.err)
	assert.Equal(t, initResult{pid: 1001, epoch: 0}, r)
	m := e.log.last(t, "tx")
	require.NotNil(t, m)
	assert.Equal(t, metadata{pid: 1001, lastPID: -1, epoch: 0, lastEpoch: -1, timeoutMs: 10000, state: Empty,
		start: -1, updated: wallStart.UnixMilli()}, *m, "the record written")
}

// TestInitProducerIDRefusals: requests Kafka refuses before looking at the
// id.
func TestInitProducerIDRefusals(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) { c.MaxTimeout = time.Minute })
	for _, tt := range []struct {
		name    string
		id      string
		timeout time.Duration
		pid     int64
		epoch   int16
		want    *kerr.Error
	}{
		{"empty id", "", time.Second, -1, -1, kerr.InvalidRequest},
		{"zero timeout", "tx", 0, -1, -1, kerr.InvalidTransactionTimeout},
		{"negative timeout", "tx", -time.Second, -1, -1, kerr.InvalidTransactionTimeout},
		{"timeout over the max", "tx", time.Minute + time.Millisecond, -1, -1, kerr.InvalidTransactionTimeout},
		{"producer id without epoch", "tx", time.Second, 5, -1, kerr.InvalidRequest},
		{"epoch without producer id", "tx", time.Second, -1, 3, kerr.InvalidRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got initResult
			e.c.InitProducerID(tt.id, tt.timeout, tt.pid, tt.epoch, func(p int64, ep int16, err *kerr.Error) {
				got = initResult{p, ep, err}
			})
			assert.Equal(t, initResult{-1, -1, tt.want}, got)
		})
	}
	assert.Zero(t, e.log.appends(0), "nothing written")
}

// TestInitProducerIDBumpsEpoch: an id with no transaction under way
// (Empty, CompleteCommit, CompleteAbort) has its epoch bumped, and stays
// with its producer id.
func TestInitProducerIDBumpsEpoch(t *testing.T) {
	for _, tt := range []struct {
		name   string
		before func(t *testing.T, e *env, pid int64, epoch int16)
	}{
		{"Empty", func(*testing.T, *env, int64, int16) {}},
		{"CompleteCommit", func(t *testing.T, e *env, pid int64, epoch int16) {
			require.Nil(t, e.add("tx", pid, epoch, tp("t", 0)).one(t))
			require.Nil(t, e.end("tx", pid, epoch, true).one(t))
			require.Equal(t, CompleteCommit, e.describe(t, "tx").State)
		}},
		{"CompleteAbort", func(t *testing.T, e *env, pid int64, epoch int16) {
			require.Nil(t, e.add("tx", pid, epoch, tp("t", 0)).one(t))
			require.Nil(t, e.end("tx", pid, epoch, false).one(t))
			require.Equal(t, CompleteAbort, e.describe(t, "tx").State)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 0)
			pid, epoch := e.initNow(t, "tx")
			tt.before(t, e, pid, epoch)
			r := e.init("tx", -1, -1).one(t)
			assert.Equal(t, initResult{pid: pid, epoch: epoch + 1}, r)
			d := e.describe(t, "tx")
			assert.Equal(t, Empty, d.State)
			assert.Empty(t, d.Partitions)
			assert.True(t, d.Started.IsZero(), "no transaction since")
			assert.Equal(t, "Empty", e.log.states(t, "tx")[len(e.log.states(t, "tx"))-1])
		})
	}
}

// emptyAt returns a replay holding id Empty with producer id pid at
// epoch.
func emptyAt(id string, pid int64, epoch int16) *Replay {
	r := &Replay{}
	r.apply(id, &metadata{pid: pid, lastPID: -1, epoch: epoch, lastEpoch: -1, timeoutMs: 10000, state: Empty,
		start: -1, updated: wallStart.UnixMilli()})
	return r
}

// TestInitProducerIDRotatesExhaustedEpoch: once the epochs of a producer
// id are exhausted, the id gets a new producer id at epoch 0; a KIP-360
// retry of that, naming the old producer id and its exhausted epoch, gets
// the same answer.
func TestInitProducerIDRotatesExhaustedEpoch(t *testing.T) {
	e := newEnv(t, 0)
	exhausted := int16(math.MaxInt16 - 1)
	_, err := e.c.Load(0, testEpoch, emptyAt("tx", 77, exhausted))
	require.NoError(t, err)

	r := e.init("tx", 77, exhausted).one(t)
	assert.Equal(t, initResult{pid: 1001, epoch: 0}, r, "a new producer id")
	assert.Equal(t, r, e.init("tx", 77, exhausted).one(t), "a retry: the same answer")
	assert.Equal(t, kerr.ProducerFenced, e.init("tx", 77, exhausted-1).one(t).err, "an older epoch")
	assert.Equal(t, initResult{pid: 1001, epoch: 1}, e.init("tx", 1001, 0).one(t), "the new producer id goes on")
}

// TestInitProducerIDRotatesWithoutKIP360: a plain InitProducerID on an
// exhausted epoch rotates too.
func TestInitProducerIDRotatesWithoutKIP360(t *testing.T) {
	e := newEnv(t, 0)
	_, err := e.c.Load(0, testEpoch, emptyAt("tx", 77, math.MaxInt16-1))
	require.NoError(t, err)
	assert.Equal(t, initResult{pid: 1001, epoch: 0}, e.init("tx", -1, -1).one(t))
}

// TestInitProducerIDKIP360: a producer that names its producer id and
// epoch has its epoch bumped if they are the current ones; a retry whose
// answer was lost is answered the same; anything else is fenced.
func TestInitProducerIDKIP360(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.initNow(t, "tx")
	require.Equal(t, int16(0), epoch)

	bumped := e.init("tx", pid, 0).one(t)
	assert.Equal(t, initResult{pid: pid, epoch: 1}, bumped, "current: bumped")
	assert.Equal(t, bumped, e.init("tx", pid, 0).one(t), "a retry of it: the same")
	assert.Equal(t, initResult{pid: pid, epoch: 2}, e.init("tx", pid, 1).one(t), "current again")
	assert.Equal(t, kerr.ProducerFenced, e.init("tx", pid, 0).one(t).err, "neither current nor last")
	assert.Equal(t, kerr.ProducerFenced, e.init("tx", pid+1, 2).one(t).err, "another producer id")

	// A plain InitProducerID (another producer) forgets the last epoch:
	// the old producer's retry is fenced.
	assert.Equal(t, initResult{pid: pid, epoch: 3}, e.init("tx", -1, -1).one(t))
	assert.Equal(t, kerr.ProducerFenced, e.init("tx", pid, 2).one(t).err)

	// An id unknown here (its state lost) takes the producer's ids as
	// they come: a new producer id.
	assert.Equal(t, initResult{pid: 1002, epoch: 0}, e.init("other", 555, 9).one(t))
}

// TestInitProducerIDConcurrent: while an id's write is under way, its
// other requests are CONCURRENT_TRANSACTIONS; the first is answered once
// written.
func TestInitProducerIDConcurrent(t *testing.T) {
	e := newEnv(t, 0)
	pid, _ := e.initNow(t, "tx")
	e.log.setHold(true)
	first := e.init("tx", -1, -1)
	assert.Equal(t, kerr.ConcurrentTransactions, e.init("tx", -1, -1).one(t).err)
	assert.Equal(t, kerr.ConcurrentTransactions, e.add("tx", pid, 0, tp("t", 0)).one(t), "the old epoch is current until written")
	assert.Equal(t, kerr.ConcurrentTransactions, e.end("tx", pid, 0, true).one(t))
	e.log.release(nil)
	assert.Equal(t, initResult{pid: pid, epoch: 1}, first.one(t))
}

// TestInitProducerIDWriteFails: a write refused or not replicated is
// answered as Kafka maps it, and the id stays as its log says.
func TestInitProducerIDWriteFails(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refuse  error // at once
		waitErr error // after the append
		want    *kerr.Error
	}{
		{"not leader", kerr.NotCoordinator, nil, kerr.NotCoordinator},
		{"not enough replicas", kerr.CoordinatorNotAvailable, nil, kerr.CoordinatorNotAvailable},
		{"too large", kerr.MessageTooLarge, nil, kerr.UnknownServerError},
		{"timed out", nil, kerr.RequestTimedOut, kerr.CoordinatorNotAvailable},
		{"moved while waiting", nil, kerr.NotCoordinator, kerr.NotCoordinator},
		{"anything else", errors.New("disk"), nil, kerr.CoordinatorNotAvailable},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 0)
			pid, _ := e.initNow(t, "tx")
			e.log.setRefuse(tt.refuse)
			e.log.setHold(tt.waitErr != nil)
			a := e.init("tx", -1, -1)
			if tt.waitErr != nil {
				e.log.release(tt.waitErr)
			}
			assert.Equal(t, initResult{-1, -1, tt.want}, a.one(t))
			e.log.setRefuse(nil)
			e.log.setHold(false)
			assert.Equal(t, initResult{pid: pid, epoch: 1}, e.init("tx", -1, -1).one(t), "epoch 0 still current")
		})
	}
}

// TestInitProducerIDNoProducerID: the allocator failing is
// COORDINATOR_NOT_AVAILABLE, and nothing is created.
func TestInitProducerIDNoProducerID(t *testing.T) {
	e := newEnv(t, 0, func(c *Config) {
		c.NextProducerID = func() (int64, error) { return 0, errors.New("no block") }
	})
	assert.Equal(t, initResult{-1, -1, kerr.CoordinatorNotAvailable}, e.init("tx", -1, -1).one(t))
	assert.Equal(t, kerr.TransactionalIDNotFound, e.describe(t, "tx").Err)
}

// TestInitProducerIDNotCoordinator: an id whose partition is not loaded
// here is NOT_COORDINATOR (a request that raced a move).
func TestInitProducerIDNotCoordinator(t *testing.T) {
	e := newEnv(t, 0)
	e.log.setLoaded(0, false)
	assert.Equal(t, kerr.NotCoordinator, e.init("tx", -1, -1).one(t).err)
}
