package purgatory

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopurgatory/purgatory/operation"
)

// benchOp is the smallest useful operation. Its condition holds from its
// third try on: submitting tries twice (before and after the watch), so the
// first check completes it. The count is guarded by the operation's lock,
// which every try holds, so that the harness adds no atomic of its own to
// what is measured (setting a flag for the condition would).
type benchOp struct {
	operation.State
	tries int
}

func (o *benchOp) TryComplete() bool {
	o.tries++
	return o.tries > 2
}

func (o *benchOp) OnComplete()   {}
func (o *benchOp) OnExpiration() {}

// prefilled returns a purgatory (real clock, reaper on) holding n pending
// operations, ten per key, an hour from their deadline.
func prefilled(b *testing.B, n int) *Purgatory[string] {
	b.Helper()
	return prefilledWith(b, n)
}

// prefilledWith is prefilled with options.
func prefilledWith(b *testing.B, n int, opts ...Option) *Purgatory[string] {
	b.Helper()
	p, err := New[string]("bench", opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	ops := make([]benchOp, n)
	keys := make([]string, max(1, n/10))
	for i := range keys {
		keys[i] = "prefill-" + strconv.Itoa(i)
	}
	for i := range ops {
		if _, err := p.TryCompleteElseWatch(&ops[i], time.Hour, keys[i%len(keys)]); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	return p
}

var watchedSizes = []int{0, 100_000, 1_000_000}

// BenchmarkWatchComplete submits an operation that cannot complete yet
// (try, watch, try, time it) and completes it with CheckAndComplete on its
// key (try, complete, untime it, compact and drop the key's list), with n
// other operations waiting. The operation is allocated in the loop: the one
// allocation per op is the caller's.
func BenchmarkWatchComplete(b *testing.B) {
	for _, n := range watchedSizes {
		b.Run("watched="+sizeName(n), func(b *testing.B) {
			p := prefilled(b, n)
			keys := []string{"bench"}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				op := &benchOp{}
				if _, err := p.TryCompleteElseWatch(op, 30*time.Second, keys...); err != nil {
					b.Fatal(err)
				}
				if p.CheckAndComplete("bench") != 1 {
					b.Fatal("not completed")
				}
			}
		})
	}
}

// BenchmarkWatchCompleteContext is BenchmarkWatchComplete with each
// operation tied to a long-lived context, as a connection's: the tie's
// allocations are the price.
func BenchmarkWatchCompleteContext(b *testing.B) {
	p := prefilled(b, 0)
	conn, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		op := &benchOp{}
		if _, err := p.TryCompleteElseWatchContext(conn, op, 30*time.Second, "bench"); err != nil {
			b.Fatal(err)
		}
		if p.CheckAndComplete("bench") != 1 {
			b.Fatal("not completed")
		}
	}
}

// BenchmarkWatchCompleteEager is BenchmarkWatchComplete with a purge
// interval of 0: each operation leaves its list as it finishes.
func BenchmarkWatchCompleteEager(b *testing.B) {
	for _, n := range watchedSizes {
		b.Run("watched="+sizeName(n), func(b *testing.B) {
			p := prefilledWith(b, n, WithPurgeInterval(0))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				op := &benchOp{}
				if _, err := p.TryCompleteElseWatch(op, 30*time.Second, "bench"); err != nil {
					b.Fatal(err)
				}
				if p.CheckAndComplete("bench") != 1 {
					b.Fatal("not completed")
				}
			}
		})
	}
}

// BenchmarkHotKeyCheck has waiters operations on one key, each also
// watched under a key of its own, and completes them all with one check:
// the long-poll fetches of many consumers tailing one partition. Lazy
// removal leaves their entries for the next check or purge; eager removal
// drops them from both lists before the check returns, compacting the hot
// key's list once.
func BenchmarkHotKeyCheck(b *testing.B) {
	for _, waiters := range []int{10, 1000} {
		for _, interval := range []int{DefaultPurgeInterval, 0} {
			b.Run("waiters="+sizeName(waiters)+"/purge="+strconv.Itoa(interval), func(b *testing.B) {
				p := prefilledWith(b, 0, WithPurgeInterval(interval))
				own := make([]string, waiters)
				for i := range own {
					own[i] = "own-" + strconv.Itoa(i)
				}
				ops := make([]hotOp, waiters)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					for i := range ops {
						ops[i] = hotOp{}
						if _, err := p.TryCompleteElseWatch(&ops[i], 30*time.Second, "hot", own[i]); err != nil {
							b.Fatal(err)
						}
					}
					for i := range ops {
						ops[i].ready = true // under no lock: nothing checks meanwhile
					}
					if p.CheckAndComplete("hot") != waiters {
						b.Fatal("not all completed")
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*waiters), "ns/waiter")
			})
		}
	}
}

type hotOp struct {
	operation.State
	ready bool
}

func (o *hotOp) TryComplete() bool { return o.ready }
func (o *hotOp) OnComplete()       {}

func BenchmarkWatchCompleteParallel(b *testing.B) {
	for _, n := range watchedSizes {
		b.Run("watched="+sizeName(n), func(b *testing.B) {
			p := prefilled(b, n)
			var id atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := "bench-" + strconv.FormatInt(id.Add(1), 10) // one key per goroutine
				keys := []string{key}
				for pb.Next() {
					op := &benchOp{}
					if _, err := p.TryCompleteElseWatch(op, 30*time.Second, keys...); err != nil {
						b.Fatal(err)
					}
					if p.CheckAndComplete(key) != 1 {
						b.Fatal("not completed")
					}
				}
			})
		})
	}
}

// BenchmarkRetainedPerWatch reports the heap the purgatory keeps per watch
// entry, beyond the operations themselves: 1M operations watched under 3
// keys each from a space of 100k keys; the heap growth from watching them
// (lists, maps, timer) divided by the 3M entries.
func BenchmarkRetainedPerWatch(b *testing.B) {
	const n, keysPerOp, keySpace = 1_000_000, 3, 100_000
	keys := make([]string, keySpace)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for range b.N {
		p, err := New[string]("retained")
		if err != nil {
			b.Fatal(err)
		}
		ops := make([]benchOp, n)
		ks := make([][]string, n)
		for i := range ks {
			ks[i] = []string{keys[(i*7)%keySpace], keys[(i*13+1)%keySpace], keys[(i*31+2)%keySpace]}
		}
		h0 := heap()
		for i := range ops {
			if _, err := p.TryCompleteElseWatch(&ops[i], time.Hour, ks[i]...); err != nil {
				b.Fatal(err)
			}
		}
		h1 := heap()
		b.ReportMetric(float64(h1-h0)/(n*keysPerOp), "B/watch")
		b.ReportMetric(float64(p.Watched()), "watched")
		runtime.KeepAlive(ops)
		runtime.KeepAlive(ks)
		_ = p.Close()
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1_000_000:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}
