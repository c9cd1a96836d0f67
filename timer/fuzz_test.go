package timer

import (
	"container/heap"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// FuzzWheelAgainstHeap runs random schedule / cancel / reschedule / advance
// sequences on the manual clock against a container/heap reference: the same
// tasks run, each at most once per scheduling, never before its deadline and
// less than a tick after it (exactly at the deadline rounded up to the tick).
func FuzzWheelAgainstHeap(f *testing.F) {
	f.Add(uint8(0), uint8(18), []byte{0, 1, 40, 0, 0, 2, 200, 3, 3, 0, 255, 9, 1, 1, 0, 0, 3, 0, 255, 255})
	f.Add(uint8(1), uint8(1), []byte{0, 0, 1, 0, 0, 1, 2, 0, 0, 2, 3, 0, 3, 0, 16, 0, 2, 1, 9, 9, 3, 0, 0, 1})
	f.Add(uint8(2), uint8(0), []byte{128, 5, 255, 255, 0, 6, 17, 0, 3, 0, 0, 200, 1, 5, 0, 0, 131, 0, 255, 255})
	f.Add(uint8(3), uint8(7), []byte{0, 1, 1, 0, 0, 2, 2, 0, 0, 3, 3, 0, 2, 1, 0, 0, 2, 2, 100, 0, 3, 0, 64, 0, 3, 0, 64, 0})
	f.Add(uint8(0), uint8(2), []byte{0, 9, 0, 16, 128, 10, 0, 1, 3, 0, 0, 16, 1, 9, 0, 0, 3, 0, 0, 64, 131, 0, 0, 64})
	f.Fuzz(func(t *testing.T, tickSel, sizeSel uint8, ops []byte) {
		tick := []time.Duration{time.Millisecond, 1, 7 * time.Microsecond, time.Second}[tickSel%4]
		size := 2 + int(sizeSel%30)
		tm, clk := newManual(t, time.Duration(tickSel)*tick/3, WithTick(tick), WithWheelSize(size))

		const nTasks = 32
		tasks := make([]*fuzzTask, nTasks)
		for i := range tasks {
			tasks[i] = &fuzzTask{clk: clk}
			tasks[i].Init(tasks[i])
		}
		var ref refHeap
		refItem := make([]*refEntry, nTasks) // pending entry per task, or nil

		// at is when the model says a task due at due, scheduled at now, runs.
		at := func(due, now time.Duration) time.Duration {
			if due <= now {
				return now
			}
			return time.Duration(ceilDiv(int64(due), int64(tick)) * int64(tick))
		}
		expectRuns := make([][]time.Duration, nTasks)

		for len(ops) >= 4 {
			op, id, v := ops[0], int(ops[1])%nTasks, time.Duration(uint16(ops[2])|uint16(ops[3])<<8)
			ops = ops[4:]
			d := v * tick / 16 // sub-tick up to 4096 ticks
			if op&0x80 != 0 {
				d *= 100_000 // and sometimes far out
			}
			task, now := tasks[id], clk.Now()
			switch op % 4 {
			case 0, 2: // schedule, reschedule
				move := op%4 == 2
				wasPending, err := tm.schedule(&task.Task, satAdd(now, d), now, move)
				require.Equal(t, refItem[id] != nil, wasPending)
				if refItem[id] != nil && !move {
					require.ErrorIs(t, err, ErrScheduled)
					continue
				}
				require.NoError(t, err)
				if refItem[id] != nil {
					heap.Remove(&ref, refItem[id].index)
					refItem[id] = nil
				}
				due := satAdd(now, d)
				if due <= now {
					expectRuns[id] = append(expectRuns[id], now)
					continue
				}
				e := &refEntry{at: at(due, now), id: id}
				heap.Push(&ref, e)
				refItem[id] = e
			case 1: // cancel
				require.Equal(t, refItem[id] != nil, tm.Cancel(&task.Task), "task %d", id)
				if refItem[id] != nil {
					heap.Remove(&ref, refItem[id].index)
					refItem[id] = nil
				}
			case 3: // advance
				target := satAdd(now, d)
				clk.Advance(d)
				for ref.Len() > 0 && ref.h[0].at <= target {
					e := heap.Pop(&ref).(*refEntry)
					refItem[e.id] = nil
					expectRuns[e.id] = append(expectRuns[e.id], e.at)
				}
			}
			require.Equal(t, ref.Len(), tm.Size())
			for i, task := range tasks {
				require.Equal(t, expectRuns[i], task.runs, "task %d runs", i)
			}
		}
		require.NoError(t, tm.check())
	})
}

type fuzzTask struct {
	Task
	clk  *ManualClock
	runs []time.Duration
}

func (f *fuzzTask) Run() { f.runs = append(f.runs, f.clk.Now()) }

type refEntry struct {
	at    time.Duration
	id    int
	index int
}

// refHeap is the reference: a plain priority queue of deadlines.
type refHeap struct{ h []*refEntry }

func (r *refHeap) Len() int           { return len(r.h) }
func (r *refHeap) Less(i, j int) bool { return r.h[i].at < r.h[j].at }
func (r *refHeap) Swap(i, j int) {
	r.h[i], r.h[j] = r.h[j], r.h[i]
	r.h[i].index, r.h[j].index = i, j
}
func (r *refHeap) Push(x any) { e := x.(*refEntry); e.index = len(r.h); r.h = append(r.h, e) }
func (r *refHeap) Pop() any {
	e := r.h[len(r.h)-1]
	r.h = r.h[:len(r.h)-1]
	return e
}
