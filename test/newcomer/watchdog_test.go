package newcomer

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWatchdogRenewsUntilUnlock(t *testing.T) {
	for _, im := range watchdogs {
		t.Run("impl="+im.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				wd := im.new(t)
				start := time.Now()
				var mu sync.Mutex
				var at []time.Duration
				lease := wd.Lock(10*time.Millisecond, func() {
					mu.Lock()
					at = append(at, time.Since(start))
					mu.Unlock()
				})

				time.Sleep(35 * time.Millisecond)
				synctest.Wait()
				lease.Unlock()
				mu.Lock()
				renewed := append([]time.Duration(nil), at...)
				mu.Unlock()
				require.Len(t, renewed, 3, "renewals at about 10, 20 and 30ms: %v", renewed)
				for i := 1; i < len(renewed); i++ {
					assert.GreaterOrEqual(t, renewed[i]-renewed[i-1], 10*time.Millisecond, "a fixed delay apart: %v", renewed)
				}

				time.Sleep(time.Second)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				assert.Len(t, at, 3, "no renewal after Unlock")
			})
		})
	}
}

// Unlock waits for a renewal in progress: a lock released while its
// watchdog is renewing it is not renewed after the release. This one runs
// on the real clock: a goroutine blocked on a mutex (the naive Unlock) is
// not durably blocked, so a bubble cannot wait for it.
func TestWatchdogUnlockWaitsForARenewalInProgress(t *testing.T) {
	for _, im := range watchdogs {
		t.Run("impl="+im.name, func(t *testing.T) {
			wd := im.new(t)
			started, release := make(chan struct{}), make(chan struct{})
			var renewing atomic.Bool
			var once sync.Once
			lease := wd.Lock(time.Millisecond, func() {
				renewing.Store(true)
				defer renewing.Store(false)
				once.Do(func() {
					close(started)
					<-release // the first renewal is slow
				})
			})
			<-started

			unlocked := make(chan bool)
			go func() {
				lease.Unlock()
				unlocked <- renewing.Load()
			}()
			// Let Unlock start waiting. The verdict does not depend on it:
			// whenever Unlock runs, it must return with no renewal running.
			time.Sleep(time.Millisecond)
			close(release)
			assert.False(t, <-unlocked, "Unlock returned while renew ran")
		})
	}
}
