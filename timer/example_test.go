package timer_test

import (
	"fmt"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// A session embeds its task, so scheduling it allocates nothing.
type session struct {
	timer.Task
	id string
}

func (s *session) Run() { fmt.Println("session", s.id, "expired") }

func Example() {
	clk := timer.NewManualClock(0)
	tm, _ := timer.New(timer.WithClock(clk))
	defer tm.Close()

	a, b := &session{id: "a"}, &session{id: "b"}
	a.Init(a)
	b.Init(b)
	_ = tm.Schedule(&a.Task, 30*time.Second)
	_ = tm.Schedule(&b.Task, 45*time.Second)

	clk.Advance(20 * time.Second)
	_, _ = tm.Reschedule(&a.Task, 30*time.Second) // a heartbeat from a
	clk.Advance(29 * time.Second)                 // 49s: b is due, a (now due at 50s) is not
	fmt.Println("pending:", tm.Size())
	// Output:
	// session b expired
	// pending: 1
}

func ExampleTimer_AfterFunc() {
	clk := timer.NewManualClock(0)
	tm, _ := timer.New(timer.WithClock(clk))
	defer tm.Close()

	task, _ := tm.AfterFunc(time.Second, func() { fmt.Println("fired at", clk.Now()) })
	_, _ = tm.AfterFunc(2*time.Second, func() { fmt.Println("fired at", clk.Now()) })
	fmt.Println("cancelled:", tm.Cancel(task))
	clk.Advance(5 * time.Second)
	// Output:
	// cancelled: true
	// fired at 2s
}

// A watchdog renews a lease until told to stop, the way Redisson keeps a
// distributed lock alive while its holder works: every third of the lease
// time, with a fixed delay so that renewals never pile up.
func ExampleTimer_ScheduleWithFixedDelay() {
	clk := timer.NewManualClock(0)
	tm, _ := timer.New(timer.WithClock(clk))
	defer tm.Close()

	const lease = 30 * time.Second
	renew := func() { fmt.Printf("%v: lease renewed until %v\n", clk.Now(), clk.Now()+lease) }
	watchdog, _ := tm.ScheduleWithFixedDelay(lease/3, lease/3, renew)

	clk.Advance(35 * time.Second) // the holder is still working
	// Unlock. Once StopAndWait returns, no renewal is running and none
	// will start (Stop alone does not wait for one in progress), so
	// nothing renews the lease after the lock is released.
	watchdog.StopAndWait()
	clk.Advance(time.Minute)
	// Output:
	// 10s: lease renewed until 40s
	// 20s: lease renewed until 50s
	// 30s: lease renewed until 1m0s
}

func ExampleTimer_ScheduleAtFixedRate() {
	clk := timer.NewManualClock(0)
	tm, _ := timer.New(timer.WithClock(clk))
	defer tm.Close()

	p, _ := tm.ScheduleAtFixedRate(0, 250*time.Millisecond, func() { fmt.Println("tick", clk.Now()) })
	clk.Advance(time.Second)
	p.Stop()
	// Output:
	// tick 0s
	// tick 250ms
	// tick 500ms
	// tick 750ms
	// tick 1s
}

func ExampleTimer_Close() {
	clk := timer.NewManualClock(0)
	tm, _ := timer.New(timer.WithClock(clk))
	for i, d := range []time.Duration{3 * time.Second, time.Second} {
		_, _ = tm.AfterFunc(d, func() { fmt.Println("ran", i) })
	}
	// Pending tasks never run after Close: they are handed back, by deadline.
	for _, t := range tm.Close() {
		fmt.Println("still pending, due at", t.Deadline())
	}
	// Output:
	// still pending, due at 1s
	// still pending, due at 3s
}
