package share

import (
	"runtime"
	"testing"
	"time"

	"github.com/gopurgatory/purgatory/timer"
)

// locksHeld is how many acquisition locks each run holds at once: a
// million, as a broker serving many share groups may.
const locksHeld = 1_000_000

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkAcquisitionLocks holds a million acquisition locks, each one
// record acquired alone, then acknowledges every record, which cancels
// its lock: the cost per lock of the whole path (acquire, schedule,
// acknowledge, cancel) and the heap each held lock takes, against the same
// number of time.AfterFunc timers made and stopped, the lock a broker
// without the wheel would hold. Run it with -benchtime=1x: each iteration
// is a million locks.
func BenchmarkAcquisitionLocks(b *testing.B) {
	b.Run("share.Partition", func(b *testing.B) {
		tm, err := timer.New()
		if err != nil {
			b.Fatal(err)
		}
		defer tm.Close()
		m, err := NewManager(Config{Timer: tm, MaxLocks: 10000})
		if err != nil {
			b.Fatal(err)
		}
		const perPartition = 10000
		parts := make([]*Partition, locksHeld/perPartition)
		b.ReportAllocs()
		b.ResetTimer()
		var heap uint64
		for range b.N {
			for i := range parts {
				parts[i] = m.GetOrInit(Key{Group: "g", Partition: int32(i)}, func() int64 { return 0 })
				m.Delete(parts[i].Key())
				parts[i] = m.GetOrInit(Key{Group: "g", Partition: int32(i)}, func() int64 { return 0 })
			}
			before := heapInUse()
			for _, p := range parts {
				for range perPartition {
					p.Acquire("m", 1, 0, perPartition, 30*time.Second)
				}
			}
			b.StopTimer()
			heap = heapInUse() - before
			b.StartTimer()
			for _, p := range parts {
				for off := range int64(perPartition) {
					if err := p.Acknowledge("m", off, off, []int8{int8(AckAccept)}, 30*time.Second); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*locksHeld), "ns/lock")
		b.ReportMetric(float64(heap)/locksHeld, "heap-B/lock")
	})
	b.Run("time.AfterFunc", func(b *testing.B) {
		timers := make([]*time.Timer, locksHeld)
		release := func() {}
		b.ReportAllocs()
		b.ResetTimer()
		var heap uint64
		for range b.N {
			before := heapInUse()
			for i := range timers {
				timers[i] = time.AfterFunc(30*time.Second, release)
			}
			b.StopTimer()
			heap = heapInUse() - before
			b.StartTimer()
			for _, t := range timers {
				t.Stop()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*locksHeld), "ns/lock")
		b.ReportMetric(float64(heap)/locksHeld, "heap-B/lock")
	})
}
