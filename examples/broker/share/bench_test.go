package share

import (
	"runtime"
	"sync"
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

// slowPersister is a share coordinator slower than the acknowledgements:
// a state never written reads as new, and a write is answered only by
// finish, so that every Persist while one is under way only marks the
// partition dirty, as on a broker under load.
type slowPersister struct {
	mu      sync.Mutex
	waiting []func(error)
}

func (*slowPersister) Read(_ Key, _ int32, done func(Snapshot, error)) {
	done(Snapshot{StartOffset: -1}, nil)
}

func (*slowPersister) Initialize(_ Key, _ int32, _ int64, done func(error)) { done(nil) }

func (s *slowPersister) Write(_ Key, _ int32, _ Snapshot, done func(error)) {
	s.mu.Lock()
	s.waiting = append(s.waiting, done)
	s.mu.Unlock()
}

// finish answers the writes waiting, and those they start, until none is
// left.
func (s *slowPersister) finish() {
	for {
		s.mu.Lock()
		w := s.waiting
		s.waiting = nil
		s.mu.Unlock()
		if len(w) == 0 {
			return
		}
		for _, done := range w {
			done(nil)
		}
	}
}

// BenchmarkAcquisitionLocks holds a million acquisition locks, each one
// record acquired alone, then acknowledges every record, which cancels
// its lock: the cost per lock of the whole path (acquire, schedule,
// acknowledge, cancel, and the write of the new state, through a share
// coordinator whose writes are slower than the acknowledgements so that
// they coalesce) and the heap each held lock takes, against the same
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
		ps := &slowPersister{}
		m, err := NewManager(Config{Timer: tm, MaxLocks: 10000, Persister: ps})
		if err != nil {
			b.Fatal(err)
		}
		const perPartition = 10000
		accept := []int8{int8(AckAccept)}
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
			var ranges []Range // a fetch's, reused as the broker's are
			for _, p := range parts {
				for range perPartition {
					ranges = p.AcquireAppend(ranges[:0], "m", 1, BatchOptimized, 0, perPartition, 30*time.Second, nil)
				}
			}
			b.StopTimer()
			heap = heapInUse() - before
			b.StartTimer()
			for _, p := range parts {
				for off := range int64(perPartition) {
					if err := p.Acknowledge("m", off, off, accept, 30*time.Second); err != nil {
						b.Fatal(err)
					}
					p.Persist(nil)
				}
			}
			ps.finish()
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
