package timer_test

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// lateness collects how late each of n tasks ran, and signals when all did.
type lateness struct {
	late  []time.Duration
	left  atomic.Int64
	done  chan struct{}
	lastT atomic.Int64 // latest run time, ns since start
}

func newLateness(n int) *lateness {
	l := &lateness{late: make([]time.Duration, n), done: make(chan struct{})}
	l.left.Store(int64(n))
	return l
}

func (l *lateness) record(i int, late, at time.Duration) {
	l.late[i] = late
	for {
		cur := l.lastT.Load()
		if int64(at) <= cur || l.lastT.CompareAndSwap(cur, int64(at)) {
			break
		}
	}
	if l.left.Add(-1) == 0 {
		close(l.done)
	}
}

// report adds p50, p99 and max lateness in µs, and fails the benchmark if
// any task ran early.
func (l *lateness) report(b *testing.B) {
	s := slices.Clone(l.late)
	slices.Sort(s)
	if s[0] < 0 {
		b.Errorf("a task ran %v early", -s[0])
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.ReportMetric(us(s[len(s)/2]), "p50-µs")
	b.ReportMetric(us(s[len(s)*99/100]), "p99-µs")
	b.ReportMetric(us(s[len(s)-1]), "max-µs")
}

// wheelTask is a task in the firing benchmarks: it records its lateness.
type wheelTask struct {
	timer.Task
	tm *timer.Timer
	l  *lateness
	i  int
}

func (w *wheelTask) Run() {
	now := w.tm.Now()
	w.l.record(w.i, now-w.Deadline(), now)
}

// schedule is one firing scenario: n tasks, task i due at due(i) after the
// start, scheduled at sched(i) after the start (the scheduler waits until
// then).
type scenario struct {
	name  string
	n     int
	due   func(i int) time.Duration
	sched func(i int) time.Duration
}

// lastDue is the latest deadline of a scenario.
func (sc scenario) lastDue() time.Duration {
	var last time.Duration
	for i := range sc.n {
		last = max(last, sc.due(i))
	}
	return last
}

func runWheel(b *testing.B, sc scenario) {
	last := sc.lastDue()
	peak := peakRSS()
	b.ResetTimer()
	c0 := cpuTime()
	var tail time.Duration
	var l *lateness
	for range b.N {
		tm, err := timer.New()
		if err != nil {
			b.Fatal(err)
		}
		l = newLateness(sc.n)
		tasks := make([]wheelTask, sc.n)
		start := tm.Now()
		for i := range tasks {
			w := &tasks[i]
			w.tm, w.l, w.i = tm, l, i
			w.Init(w)
			waitUntil(sc.sched(i), func() time.Duration { return tm.Now() - start })
			if err := tm.ScheduleAt(&w.Task, start+sc.due(i)); err != nil {
				b.Fatal(err)
			}
		}
		<-l.done
		tail = time.Duration(l.lastT.Load()) - (start + last)
		tm.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(peak(), "peak-RSS-MiB")
	b.ReportMetric(float64(tail)/1e6, "tail-ms")
	l.report(b)
}

func runAfterFunc(b *testing.B, sc scenario) {
	last := sc.lastDue()
	peak := peakRSS()
	b.ResetTimer()
	c0 := cpuTime()
	var tail time.Duration
	var l *lateness
	for range b.N {
		l = newLateness(sc.n)
		start := time.Now()
		for i := range sc.n {
			due := sc.due(i)
			waitUntil(sc.sched(i), func() time.Duration { return time.Since(start) })
			time.AfterFunc(due-time.Since(start), func() {
				now := time.Since(start)
				l.record(i, now-due, now)
			})
		}
		<-l.done
		tail = time.Duration(l.lastT.Load()) - last
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(peak(), "peak-RSS-MiB")
	b.ReportMetric(float64(tail)/1e6, "tail-ms")
	l.report(b)
}

// waitUntil sleeps until elapsed() reaches at. Sleeping has the runtime's
// timer granularity (about 1ms here), so a paced scenario schedules in small
// groups; deadlines come from the plan, not from when Schedule ran, so they
// are exact either way, and no core is burnt spinning.
func waitUntil(at time.Duration, elapsed func() time.Duration) {
	if d := at - elapsed(); d > 0 {
		time.Sleep(d)
	}
}

func sides(b *testing.B, sc scenario) {
	b.Run(sc.name+"/impl=wheel", func(b *testing.B) { runWheel(b, sc) })
	b.Run(sc.name+"/impl=afterfunc", func(b *testing.B) { runAfterFunc(b, sc) })
}

// fireOffset starts BenchmarkFire's one-second window after every task has
// been scheduled, so that lateness is the timer's, not the scheduling loop's.
const fireOffset = 500 * time.Millisecond

// BenchmarkFire schedules 1M tasks due uniformly within one second, up
// front, and measures until the last has run: wall time (ns/op), CPU time,
// peak RSS, how long after the last deadline the last task ran (tail-ms),
// and each task's lateness.
func BenchmarkFire(b *testing.B) {
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(5, 6))
	due := make([]time.Duration, n)
	for i := range due {
		due[i] = time.Duration(rng.Int64N(int64(time.Second)))
	}
	sides(b, scenario{
		name:  "1M-in-1s",
		n:     n,
		due:   func(i int) time.Duration { return due[i] + fireOffset },
		sched: func(int) time.Duration { return 0 },
	})
}

// BenchmarkLateness measures expiry lateness of 10k tasks on the real clock:
// paced (one scheduled every 100µs, each due 50ms later), and in one burst due
// at 50ms and at 200ms.
func BenchmarkLateness(b *testing.B) {
	const n = 10_000
	for _, sc := range []scenario{
		{name: "paced-1s-at-50ms", n: n,
			due:   func(i int) time.Duration { return time.Duration(i)*100*time.Microsecond + 50*time.Millisecond },
			sched: func(i int) time.Duration { return time.Duration(i) * 100 * time.Microsecond }},
		{name: "burst-at-50ms", n: n,
			due:   func(int) time.Duration { return 50 * time.Millisecond },
			sched: func(int) time.Duration { return 0 }},
		{name: "burst-at-200ms", n: n,
			due:   func(int) time.Duration { return 200 * time.Millisecond },
			sched: func(int) time.Duration { return 0 }},
	} {
		sides(b, sc)
	}
}
