package newcomer

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCounterWaitReachesItsTarget(t *testing.T) {
	for _, im := range counters {
		t.Run("impl="+im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := im.new(t)
				one, three := c.Await("p", 1, time.Minute), c.Await("p", 3, time.Minute)

				c.Add("p", 1)
				synctest.Wait()
				require.True(t, answered(one))
				assert.True(t, one.OK())
				assert.False(t, answered(three), "at 1 of 3")

				c.Add("other", 5)
				synctest.Wait()
				assert.False(t, answered(three), "another key's count")

				c.Add("p", 2)
				<-three.Done()
				assert.True(t, three.OK())

				reached := c.Await("p", 2, time.Minute)
				require.True(t, answered(reached), "a target reached already answers at once")
				assert.True(t, reached.OK())
			})
		})
	}
}

func TestCounterWaitTimesOutNeverEarly(t *testing.T) {
	for _, im := range counters {
		t.Run("impl="+im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := im.new(t)
				w := c.Await("p", 2, time.Second)
				c.Add("p", 1)

				time.Sleep(time.Second - time.Millisecond)
				synctest.Wait()
				assert.False(t, answered(w), "not before its timeout")
				time.Sleep(2 * time.Millisecond) // the wheel's tick of slack
				synctest.Wait()
				require.True(t, answered(w))
				assert.False(t, w.OK(), "1 of 2 at the timeout")

				c.Add("p", 1) // too late: answered once
				assert.False(t, w.OK())
			})
		})
	}
}

func TestCounterWaitCloseAnswersEveryWaiter(t *testing.T) {
	for _, im := range counters {
		t.Run("impl="+im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := im.new(t)
				w := c.Await("p", 1, time.Minute)
				c.Close()
				<-w.Done()
				assert.False(t, w.OK())
				after := c.Await("p", 1, time.Minute)
				require.True(t, answered(after))
				assert.False(t, after.OK())
			})
		})
	}
}
