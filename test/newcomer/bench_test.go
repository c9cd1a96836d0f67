package newcomer

import (
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Every benchmark runs the two versions of a program as sub-benchmarks
// impl=purgatory and impl=naive of one run, so that
//
//	benchstat -col /impl bench-newcomer.txt
//
// prints their ratio. The package documentation says what an operation is.

const (
	roundSize    = 1024             // waiters or leases in flight at once
	benchKeys    = 16               // keys with events
	timeoutEvery = 8                // one waiter in 8 times out
	shortTimeout = time.Millisecond // theirs
	longTimeout  = time.Minute      // the others', never reached
)

// Keys made once, so that naming one allocates nothing in the loop.
var keys, quietKeys = func() (k, q [benchKeys]string) {
	for i := range benchKeys {
		k[i], q[i] = "key-"+strconv.Itoa(i), "quiet-"+strconv.Itoa(i)
	}
	return k, q
}()

func BenchmarkLongPoll(b *testing.B) {
	for _, im := range longPolls {
		b.Run("impl="+im.name, func(b *testing.B) {
			lp := im.new(b)
			ws := make([]Waiter, roundSize)
			measure(b, func() {
				for done := 0; done < b.N; done += roundSize {
					longPollRound(b, lp, ws[:min(roundSize, b.N-done)])
				}
			})
		})
	}
}

// longPollRound parks len(ws) waiters, one in timeoutEvery on a key with
// no events and a short timeout, then sends one event to each of the other
// keys, and waits for every answer.
func longPollRound(b *testing.B, lp LongPoll, ws []Waiter) {
	timeouts := 0
	for i := range ws {
		if i%timeoutEvery == 0 {
			ws[i] = lp.Wait(quietKeys[i/timeoutEvery%benchKeys], shortTimeout)
			timeouts++
		} else {
			ws[i] = lp.Wait(keys[i%benchKeys], longTimeout)
		}
	}
	woken := 0
	for _, k := range keys {
		woken += lp.Notify(k)
	}
	checkAnswers(b, ws, len(ws)-timeouts, woken)
}

func BenchmarkCounterWait(b *testing.B) {
	const steps = 4 // each key's count grows by this much a round
	for _, im := range counters {
		b.Run("impl="+im.name, func(b *testing.B) {
			c := im.new(b)
			ws := make([]Waiter, roundSize)
			var base uint64 // every key's count at the round's start
			measure(b, func() {
				for done := 0; done < b.N; done += roundSize {
					ws := ws[:min(roundSize, b.N-done)]
					timeouts := 0
					for i := range ws {
						if i%timeoutEvery == 0 {
							ws[i] = c.Await(quietKeys[i/timeoutEvery%benchKeys], 1, shortTimeout)
							timeouts++
						} else {
							ws[i] = c.Await(keys[i%benchKeys], base+1+uint64(i/benchKeys%steps), longTimeout)
						}
					}
					for range steps {
						for _, k := range keys {
							c.Add(k, 1)
						}
					}
					base += steps
					checkAnswers(b, ws, len(ws)-timeouts, len(ws)-timeouts)
				}
			})
		})
	}
}

// checkAnswers waits for every waiter and fails the benchmark unless ok of
// them met their condition, as the events reported (woken): both versions
// must have done the same work.
func checkAnswers(b *testing.B, ws []Waiter, ok, woken int) {
	got := 0
	for _, w := range ws {
		<-w.Done()
		if w.OK() {
			got++
		}
	}
	if got != ok || woken != ok {
		b.Fatalf("%d of %d waiters met their condition, the events woke %d; want %d", got, len(ws), woken, ok)
	}
}

func BenchmarkWatchdog(b *testing.B) {
	const (
		period   = time.Millisecond
		renewals = 3 // before the holder unlocks
	)
	for _, im := range watchdogs {
		b.Run("impl="+im.name, func(b *testing.B) {
			wd := im.new(b)
			leases := make([]Lease, roundSize)
			counts := make([]atomic.Int32, roundSize)
			measure(b, func() {
				for done := 0; done < b.N; done += roundSize {
					n := min(roundSize, b.N-done)
					var renewed sync.WaitGroup
					renewed.Add(n)
					for i := range n {
						counts[i].Store(0)
						leases[i] = wd.Lock(period, func() {
							if counts[i].Add(1) == renewals {
								renewed.Done()
							}
						})
					}
					renewed.Wait()
					for _, l := range leases[:n] {
						l.Unlock()
					}
				}
			})
		})
	}
}

// measure runs body as the measured part of b, and reports the process's
// CPU time per operation next to ns/op: the rounds wait for timeouts and
// renewals on the real clock, idle time that ns/op counts and cpu-ns/op
// does not.
func measure(b *testing.B, body func()) {
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	body()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
