package cluster

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
)

// TestSessionCountedFromTheSending: a broker's own count of its session
// runs from the sending of the last heartbeat the controller answered, so
// it ends no later than the controller's (which counts from receiving
// it); an answer to an older heartbeat moves nothing; the hook hears of
// the first session, of a lapse and of the session coming back, and a
// broker stopping of nothing. On synctest's clock: deterministic.
func TestSessionCountedFromTheSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const session = 9 * time.Second
		m := &Member{cfg: Config{SessionTimeout: session}, log: zap.NewNop(), ctx: context.Background()}
		ps := &peers{m: m, started: time.Now()}
		ps.lastRenewed.Store(-int64(session))
		m.peers = ps
		changes := 0
		m.OnSessionChange(func() { changes++ })

		assert.False(t, ps.sessionCurrent(), "no heartbeat answered yet")
		sent := ps.clock()
		time.Sleep(time.Second) // the answer comes a second after the sending
		ps.renewed(sent)
		ps.noticeSession()
		assert.True(t, ps.sessionCurrent())
		assert.Equal(t, 1, changes, "the first session: the broker starts leading")

		time.Sleep(time.Second)
		ps.renewed(sent) // a late answer to the first heartbeat again
		time.Sleep(session - 2*time.Second - time.Nanosecond)
		assert.True(t, ps.sessionCurrent(), "just under the session after the sending")
		time.Sleep(time.Nanosecond)
		assert.False(t, ps.sessionCurrent(), "the session after the sending, not after the answer")
		ps.noticeSession()
		assert.Equal(t, 2, changes, "the lapse is heard")

		ps.renewed(sent) // answered now, but sent a session ago: it does not count
		assert.False(t, ps.sessionCurrent())
		ps.renewed(ps.clock())
		ps.noticeSession()
		assert.True(t, ps.sessionCurrent())
		assert.Equal(t, 3, changes, "and the session coming back")

		ps.stopping.Store(true)
		time.Sleep(session)
		ps.noticeSession()
		assert.Equal(t, 3, changes, "a broker stopping hears of nothing")
	})
}
