package newcomer

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The behaviour tests run each version of a program in a synctest bubble:
// its timers (the library's wheel, time.AfterFunc) run on virtual time, and
// synctest.Wait returns once every goroutine of the bubble is blocked, so
// "not answered yet" is a fact, not a guess.

func TestLongPollNotifyAnswersTheWaitersParkedBefore(t *testing.T) {
	for _, im := range longPolls {
		t.Run("impl="+im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lp := im.new(t)
				a, b := lp.Wait("k", time.Minute), lp.Wait("k", time.Minute)
				other := lp.Wait("other", time.Minute)

				assert.Equal(t, 2, lp.Notify("k"))
				synctest.Wait()
				for _, w := range []Waiter{a, b} {
					require.True(t, answered(w))
					assert.True(t, w.OK(), "answered by the event")
				}
				assert.False(t, answered(other), "an event on another key")

				late := lp.Wait("k", time.Minute) // after the event: waits for the next
				synctest.Wait()
				assert.False(t, answered(late))
				assert.Equal(t, 1, lp.Notify("k"))
				<-late.Done()
				assert.True(t, late.OK())
				assert.Zero(t, lp.Notify("nobody"))
			})
		})
	}
}

func TestLongPollTimesOutNeverEarly(t *testing.T) {
	for _, im := range longPolls {
		t.Run("impl="+im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lp := im.new(t)
				w := lp.Wait("k", time.Second)

				time.Sleep(time.Second - time.Millisecond)
				synctest.Wait()
				assert.False(t, answered(w), "not before its timeout")
				// The wheel runs a task within a tick (1ms) of its deadline.
				time.Sleep(2 * time.Millisecond)
				synctest.Wait()
				require.True(t, answered(w), "answered at its timeout")
				assert.False(t, w.OK())
				assert.Zero(t, lp.Notify("k"), "a waiter that timed out is gone")
			})
		})
	}
}

func TestLongPollManyWaitersOneEvent(t *testing.T) {
	const n = 500
	for _, im := range longPolls {
		t.Run("impl="+im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lp := im.new(t)
				var ws []Waiter
				for range n {
					ws = append(ws, lp.Wait("k", time.Minute))
				}
				assert.Equal(t, n, lp.Notify("k"))
				for i, w := range ws {
					<-w.Done()
					assert.True(t, w.OK(), "waiter %d", i)
				}
			})
		})
	}
}

func TestLongPollCloseAnswersEveryWaiter(t *testing.T) {
	for _, im := range longPolls {
		t.Run("impl="+im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lp := im.new(t)
				w := lp.Wait("k", time.Minute)
				lp.Close()
				<-w.Done()
				assert.False(t, w.OK())

				after := lp.Wait("k", time.Minute)
				require.True(t, answered(after), "refused once closed")
				assert.False(t, after.OK())
			})
		})
	}
}
