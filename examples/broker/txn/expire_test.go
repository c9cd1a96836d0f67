package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

const testExpiration = time.Hour

func withExpiration(c *Config) { c.IDExpiration = testExpiration }

// TestIDExpires: an id idle for IDExpiration since its last change gets
// its tombstone written (Dead meanwhile) and is forgotten; an
// InitProducerID then starts it afresh, with a new producer id.
func TestIDExpires(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, e *env)
	}{
		{"Empty", func(t *testing.T, e *env) { e.initNow(t, "tx") }},
		{"CompleteCommit", func(t *testing.T, e *env) {
			pid, epoch := e.ongoing(t, "tx", tp("t", 0))
			require.Nil(t, e.end("tx", pid, epoch, true).one(t))
		}},
		{"CompleteAbort", func(t *testing.T, e *env) {
			pid, epoch := e.ongoing(t, "tx", tp("t", 0))
			require.Nil(t, e.end("tx", pid, epoch, false).one(t))
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, 0, withExpiration)
			tt.setup(t, e)
			pid := e.describe(t, "tx").ProducerID
			e.clk.Advance(testExpiration - time.Millisecond)
			require.Nil(t, e.describe(t, "tx").Err, "not before")

			e.log.setHold(true)
			e.clk.Advance(time.Millisecond)
			states := e.log.states(t, "tx")
			assert.Equal(t, "tombstone", states[len(states)-1])
			// Until its tombstone is written, Kafka shows it as it was.
			assert.Nil(t, e.describe(t, "tx").Err)
			assert.Equal(t, kerr.ConcurrentTransactions, e.init("tx", -1, -1).one(t).err, "being expired")
			list, _ := e.c.List(nil, nil, -1)
			assert.Len(t, list, 1)
			e.log.setHold(false)
			e.log.release(nil)

			assert.Equal(t, kerr.TransactionalIDNotFound, e.describe(t, "tx").Err)
			list, _ = e.c.List(nil, nil, -1)
			assert.Empty(t, list)
			assert.Nil(t, e.log.last(t, "tx"), "the replay forgets it")
			r := e.init("tx", -1, -1).one(t)
			require.Nil(t, r.err)
			assert.NotEqual(t, pid, r.pid, "a new producer id")
			assert.Equal(t, int16(0), r.epoch)
		})
	}
}

// TestIDExpirationCountsFromLastChange: every change of an id starts its
// expiration again.
func TestIDExpirationCountsFromLastChange(t *testing.T) {
	e := newEnv(t, 0, withExpiration)
	pid, epoch := e.initNow(t, "tx")
	e.clk.Advance(testExpiration / 2)
	require.Nil(t, e.add("tx", pid, epoch, tp("t", 0)).one(t))
	require.Nil(t, e.end("tx", pid, epoch, true).one(t))
	e.clk.Advance(testExpiration/2 + time.Minute)
	require.Nil(t, e.describe(t, "tx").Err, "counted from the commit")
	e.clk.Advance(testExpiration / 2)
	assert.Equal(t, kerr.TransactionalIDNotFound, e.describe(t, "tx").Err)
}

// TestIDExpirationRetried: a tombstone that cannot be written is tried
// again later, and the id stays meanwhile.
func TestIDExpirationRetried(t *testing.T) {
	e := newEnv(t, 0, withExpiration)
	e.initNow(t, "tx")
	e.log.setRefuse(kerr.CoordinatorNotAvailable)
	e.clk.Advance(testExpiration)
	assert.Nil(t, e.describe(t, "tx").Err, "kept")
	e.log.setRefuse(nil)
	e.clk.Advance(expireRetry - time.Millisecond)
	assert.Nil(t, e.describe(t, "tx").Err, "not before the retry")
	e.clk.Advance(time.Millisecond)
	assert.Equal(t, kerr.TransactionalIDNotFound, e.describe(t, "tx").Err)
}
