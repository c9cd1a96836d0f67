package reaper_test

import (
	"fmt"
	"time"

	"github.com/gopurgatory/purgatory/reaper"
	"github.com/gopurgatory/purgatory/timer"
)

// purge is a purger of your own: the reaper gives it a turn after each
// round, and at once after Wake.
type purge struct{ woken chan struct{} }

func (p *purge) MaybePurge() {
	select {
	case p.woken <- struct{}{}:
	default:
	}
}

// A reaper drives a timer that does not drive itself, the way a purgatory
// drives its own: it advances the clock, waiting at most maxWait for the
// earliest deadline, and gives the purger its turn after each round.
func Example() {
	tm, _ := timer.New(timer.WithAutoAdvance(false))
	defer tm.Close()
	p := &purge{woken: make(chan struct{}, 1)}
	r, _ := reaper.New(tm, p, time.Hour, nil) // an hour: only deadlines and Wake end a wait
	r.Start()
	defer r.Stop()

	fired := make(chan struct{})
	_, _ = tm.AfterFunc(10*time.Millisecond, func() { close(fired) })
	<-fired
	fmt.Println("the reaper's advance ran the task")
	<-p.woken // the round that ran it ended with a purge turn

	r.Wake() // a purge is wanted now, not in an hour
	<-p.woken
	fmt.Println("woken: the purger had its turn")
	// Output:
	// the reaper's advance ran the task
	// woken: the purger had its turn
}
