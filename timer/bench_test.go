package timer_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// Every benchmark runs the wheel and the baseline, time.AfterFunc + Stop, as
// sub-benchmarks impl=wheel and impl=afterfunc of one run, so that
//
//	benchstat -col /impl bench.txt
//
// prints their ratio. Pending tasks are due uniformly in [1h, 2h), so they
// stay pending; each measured task is due in a delay drawn from benchDelays,
// uniform in [1s, 60s) like request timeouts.

var benchDelays = func() []time.Duration {
	rng := rand.New(rand.NewPCG(1, 2))
	d := make([]time.Duration, 4096)
	for i := range d {
		d[i] = time.Second + time.Duration(rng.Int64N(int64(59*time.Second)))
	}
	return d
}()

const delayMask = 4095

var pendingSizes = []int{0, 100_000, 1_000_000, 10_000_000}

func sizeLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// prefill is the set of pending tasks a benchmark runs against. It is kept
// between the calls the testing package makes with growing b.N, and torn
// down (with a GC) before another is built, so one implementation's pending
// tasks never weigh on the other's measurement.
var prefill struct {
	key    string
	tm     *timer.Timer
	tasks  []timer.Task
	timers []*time.Timer
}

func noop() {}

func prefilledWheel(b *testing.B, n int) *timer.Timer {
	key := "wheel/" + strconv.Itoa(n)
	if prefill.key == key {
		return prefill.tm
	}
	teardownPrefill()
	tm, err := timer.New()
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	tasks := make([]timer.Task, n)
	for i := range tasks {
		tasks[i].Init(timer.Func(noop))
		if err := tm.Schedule(&tasks[i], time.Hour+time.Duration(rng.Int64N(int64(time.Hour)))); err != nil {
			b.Fatal(err)
		}
	}
	prefill.key, prefill.tm, prefill.tasks = key, tm, tasks
	runtime.GC()
	return tm
}

func prefilledAfterFunc(n int) {
	key := "afterfunc/" + strconv.Itoa(n)
	if prefill.key == key {
		return
	}
	teardownPrefill()
	rng := rand.New(rand.NewPCG(3, 4))
	timers := make([]*time.Timer, n)
	for i := range timers {
		timers[i] = time.AfterFunc(time.Hour+time.Duration(rng.Int64N(int64(time.Hour))), noop)
	}
	prefill.key, prefill.timers = key, timers
	runtime.GC()
}

func teardownPrefill() {
	if prefill.tm != nil {
		prefill.tm.Close()
	}
	for _, t := range prefill.timers {
		t.Stop()
	}
	prefill.key, prefill.tm, prefill.tasks, prefill.timers = "", nil, nil, nil
	runtime.GC()
}

// cpuTime returns the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureCPU reports CPU time per op next to ns/op: equal figures mean no
// hidden background work.
func measureCPU(b *testing.B, body func()) {
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	body()
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkScheduleCancel(b *testing.B) {
	for _, n := range pendingSizes {
		b.Run("pending="+sizeLabel(n), func(b *testing.B) {
			b.Run("impl=wheel", func(b *testing.B) {
				tm := prefilledWheel(b, n)
				var task timer.Task
				task.Init(timer.Func(noop))
				measureCPU(b, func() {
					for i := range b.N {
						_ = tm.Schedule(&task, benchDelays[i&delayMask])
						tm.Cancel(&task)
					}
				})
			})
			b.Run("impl=afterfunc", func(b *testing.B) {
				prefilledAfterFunc(n)
				measureCPU(b, func() {
					for i := range b.N {
						time.AfterFunc(benchDelays[i&delayMask], noop).Stop()
					}
				})
			})
		})
	}
	teardownPrefill()
}

// BenchmarkScheduleCancelFloor measures what every Schedule and Cancel
// pair pays whatever the wheel does, on the machine it runs on: the one
// clock reading Schedule takes (a deadline computed from an older reading
// could run the task early, which the timer never does) and the two
// uncontended lock and unlock pairs of the task's shard (one each for
// Schedule and Cancel). BenchmarkScheduleCancel less these is the wheel's
// own work.
func BenchmarkScheduleCancelFloor(b *testing.B) {
	b.Run("part=clock", func(b *testing.B) {
		c := timer.NewRealClock()
		var sink time.Duration
		for range b.N {
			sink += c.Now()
		}
		if sink < 0 {
			b.Fatal(sink)
		}
	})
	b.Run("part=locks", func(b *testing.B) {
		var mu sync.Mutex
		for range b.N {
			mu.Lock()
			mu.Unlock() //nolint:staticcheck // the pair is what is measured
			mu.Lock()
			mu.Unlock() //nolint:staticcheck // the pair is what is measured
		}
	})
}

func BenchmarkScheduleCancelParallel(b *testing.B) {
	for _, n := range pendingSizes {
		b.Run("pending="+sizeLabel(n), func(b *testing.B) {
			b.Run("impl=wheel", func(b *testing.B) {
				tm := prefilledWheel(b, n)
				measureCPU(b, func() {
					b.RunParallel(func(pb *testing.PB) {
						var task timer.Task
						task.Init(timer.Func(noop))
						for i := 0; pb.Next(); i++ {
							_ = tm.Schedule(&task, benchDelays[i&delayMask])
							tm.Cancel(&task)
						}
					})
				})
			})
			b.Run("impl=afterfunc", func(b *testing.B) {
				prefilledAfterFunc(n)
				measureCPU(b, func() {
					b.RunParallel(func(pb *testing.PB) {
						for i := 0; pb.Next(); i++ {
							time.AfterFunc(benchDelays[i&delayMask], noop).Stop()
						}
					})
				})
			})
		})
	}
	teardownPrefill()
}

// BenchmarkMemoryPerTask reports the heap, after GC, that one pending task
// costs: 1M tasks are scheduled and the heap growth divided by 1M. For the
// wheel that is the Task itself, 48 bytes embedded in the caller's value;
// fixed-B is the timer's own memory (levels, buckets, queue, goroutines'
// bookkeeping excluded) once every level the test needs exists.
func BenchmarkMemoryPerTask(b *testing.B) {
	const n = 1_000_000
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	b.Run("impl=wheel", func(b *testing.B) {
		for range b.N {
			h0 := heap()
			tm, err := timer.New()
			if err != nil {
				b.Fatal(err)
			}
			h1 := heap()
			tasks := make([]timer.Task, n)
			for i := range tasks {
				tasks[i].Init(timer.Func(noop))
				_ = tm.Schedule(&tasks[i], time.Hour+time.Duration(i)*time.Millisecond)
			}
			h2 := heap()
			b.ReportMetric(float64(h2-h1)/n, "B/task")
			b.ReportMetric(float64(h1-h0), "fixed-B")
			runtime.KeepAlive(tasks)
			tm.Close()
		}
	})
	b.Run("impl=afterfunc", func(b *testing.B) {
		for range b.N {
			h1 := heap()
			timers := make([]*time.Timer, n)
			for i := range timers {
				timers[i] = time.AfterFunc(time.Hour+time.Duration(i)*time.Millisecond, noop)
			}
			h2 := heap()
			// Count the *time.Timer slice too: it is how the caller keeps a
			// handle to cancel, as the wheel's caller keeps its Task.
			b.ReportMetric(float64(h2-h1)/n, "B/task")
			b.ReportMetric(0, "fixed-B")
			for _, t := range timers {
				t.Stop()
			}
		}
	})
}

// BenchmarkIdle reports the CPU a timer costs over one second of doing
// nothing, with no task pending or 1M pending an hour away, as a percentage
// of one core.
func BenchmarkIdle(b *testing.B) {
	for _, n := range []int{0, 1_000_000} {
		b.Run("pending="+sizeLabel(n), func(b *testing.B) {
			b.Run("impl=wheel", func(b *testing.B) {
				prefilledWheel(b, n)
				idle(b)
			})
			b.Run("impl=afterfunc", func(b *testing.B) {
				prefilledAfterFunc(n)
				idle(b)
			})
		})
	}
	teardownPrefill()
}

func idle(b *testing.B) {
	// Return freed memory to the OS now: the scavenger doing it in the
	// background after the previous benchmark would be measured as idle CPU.
	debug.FreeOSMemory()
	b.ResetTimer()
	c0, t0 := cpuTime(), time.Now()
	for range b.N {
		time.Sleep(time.Second)
	}
	b.StopTimer()
	b.ReportMetric(100*float64(cpuTime()-c0)/float64(time.Since(t0)), "cpu-%")
}

// peakRSS resets the kernel's high-water mark of resident memory and returns
// a function reading the peak since, in MiB.
func peakRSS() func() float64 {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return func() float64 {
		data, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return 0
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				var kb float64
				_, _ = fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f", &kb)
				return kb / 1024
			}
		}
		return 0
	}
}
