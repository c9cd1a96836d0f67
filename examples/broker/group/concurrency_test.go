package group

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestEveryJoinAndSyncIsAnsweredOnce races members that join, sync,
// heartbeat, commit, leave and disconnect at random against a clock that
// keeps expiring their sessions, rebalances and syncs; then closes the
// coordinator. Every JoinGroup and SyncGroup must have been answered
// exactly once (and -race must stay quiet).
func TestEveryJoinAndSyncIsAnsweredOnce(t *testing.T) {
	c, clk := newTestCoordinator(t, WithInitialRebalanceDelay(100*time.Millisecond),
		WithSessionTimeouts(time.Millisecond, time.Hour))
	const workers, rounds = 8, 1000

	var (
		mu    sync.Mutex
		joins []*answers[JoinResult]
		syncs []*answers[SyncResult]
	)
	stop, ticked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ticked)
		for {
			select {
			case <-stop:
				return
			default:
				clk.Advance(37 * time.Millisecond)
				runtime.Gosched()
			}
		}
	}()

	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			group := fmt.Sprintf("g%d", w%2) // two groups, four members each
			instance := ""
			if w%4 == 0 {
				instance = fmt.Sprintf("static-%d", w)
			}
			var (
				waiter testWaiter
				last   *answers[JoinResult]
				known  = JoinResult{Generation: -1}
			)
			for range rounds {
				// As a client does: take the id and generation a JoinGroup
				// gives, and start over when told the id is gone.
				if last != nil {
					if r, ok := last.first(); ok {
						switch r.Err {
						case nil, kerr.MemberIDRequired:
							known = r
						case kerr.UnknownMemberID, kerr.FencedInstanceID:
							known = JoinResult{Generation: -1}
						}
						last = nil
					}
				}
				switch rng.IntN(8) {
				case 0, 1, 2:
					req := joinReq(group, known.MemberID, "range", "sticky")
					req.InstanceID = instance
					req.SessionTimeout = 300 * time.Millisecond
					req.RebalanceTimeout = 500 * time.Millisecond
					req.RequireKnownMemberID = rng.IntN(2) == 0
					a := new(answers[JoinResult])
					mu.Lock()
					joins = append(joins, a)
					mu.Unlock()
					c.JoinGroup(req, a.respond, &waiter)
					last = a
				case 3:
					req := SyncRequest{Group: group, MemberID: known.MemberID, InstanceID: instance, Generation: known.Generation}
					for _, m := range known.Members {
						req.Assignments = append(req.Assignments, Assignment{m.MemberID, assignment(m.MemberID)})
					}
					a := new(answers[SyncResult])
					mu.Lock()
					syncs = append(syncs, a)
					mu.Unlock()
					c.SyncGroup(req, a.respond)
				case 4:
					switch c.Heartbeat(HeartbeatRequest{Group: group, MemberID: known.MemberID, InstanceID: instance, Generation: known.Generation}) {
					case kerr.UnknownMemberID, kerr.FencedInstanceID:
						known = JoinResult{Generation: -1}
					}
				case 5:
					commit(t, c, group, known.MemberID, known.Generation, 1)
				case 6:
					if rng.IntN(4) == 0 {
						c.LeaveGroup(group, []MemberIdentity{{MemberID: known.MemberID, InstanceID: instance}})
					}
				case 7:
					waiter.disconnect()
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-ticked
	require.NoError(t, c.Close()) // answers whatever still waits

	outcomes := make(map[string]int)
	for i, a := range joins {
		assert.Equal(t, 1, a.n(), "JoinGroup %d answered exactly once", i)
		if r, ok := a.first(); ok {
			outcomes["join "+errName(r.Err)]++
		}
	}
	for i, a := range syncs {
		assert.Equal(t, 1, a.n(), "SyncGroup %d answered exactly once", i)
		if r, ok := a.first(); ok {
			outcomes["sync "+errName(r.Err)]++
		}
	}
	t.Logf("%d JoinGroups, %d SyncGroups: %v", len(joins), len(syncs), outcomes)
}

func errName(err *kerr.Error) string {
	if err == nil {
		return "NONE"
	}
	return err.Message
}

// TestCloseRacingJoins closes the coordinator while members keep joining
// and syncing: requests parked just before Close, and those submitted while
// it runs, are answered exactly once like the others.
func TestCloseRacingJoins(t *testing.T) {
	for round := range 20 {
		c, clk := newTestCoordinator(t, WithInitialRebalanceDelay(0))
		var (
			mu    sync.Mutex
			joins []*answers[JoinResult]
			syncs []*answers[SyncResult]
			wg    sync.WaitGroup
		)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var waiter testWaiter
				known := JoinResult{Generation: -1}
				for i := range 50 {
					a := new(answers[JoinResult])
					mu.Lock()
					joins = append(joins, a)
					mu.Unlock()
					c.JoinGroup(joinReq(fmt.Sprintf("g%d", (w+i)%3), known.MemberID), a.respond, &waiter)
					if r, ok := a.first(); ok && r.Err == nil {
						known = r
						s := new(answers[SyncResult])
						mu.Lock()
						syncs = append(syncs, s)
						mu.Unlock()
						c.SyncGroup(SyncRequest{Group: fmt.Sprintf("g%d", (w+i)%3), MemberID: r.MemberID, Generation: r.Generation}, s.respond)
					}
					if i == 25 && w == 0 {
						clk.Advance(time.Second) // the first delayed joins expire
					}
				}
			}()
		}
		for { // close in the thick of it
			mu.Lock()
			n := len(joins)
			mu.Unlock()
			if n >= 40 {
				break
			}
			runtime.Gosched()
		}
		require.NoError(t, c.Close())
		wg.Wait()
		for i, a := range joins {
			require.Equal(t, 1, a.n(), "round %d: JoinGroup %d answered exactly once", round, i)
		}
		for i, a := range syncs {
			require.Equal(t, 1, a.n(), "round %d: SyncGroup %d answered exactly once", round, i)
		}
	}
}
