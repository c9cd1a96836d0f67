package timer

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onEveryShard returns one recorder per shard of tm, each on a different
// shard, so that a test does not depend on where the allocator put them.
func onEveryShard(t *testing.T, tm *Timer, clk interface{ Now() time.Duration }) []*recorder {
	t.Helper()
	out := make([]*recorder, len(tm.shards))
	found := 0
	for range 1 << 16 {
		r := newRecorder(clk)
		if i := tm.shardIndex(&r.Task); out[i] == nil {
			out[i] = r
			found++
		}
		if found == len(out) {
			return out
		}
	}
	t.Fatalf("no task landed on %d of %d shards", len(out)-found, len(out))
	return nil
}

func (tm *Timer) shardIndex(t *Task) int {
	sh := tm.shardOf(t)
	for i := range tm.shards {
		if &tm.shards[i] == sh {
			return i
		}
	}
	panic("task on no shard")
}

func TestShardsRoundUpToPowerOfTwo(t *testing.T) {
	for n, want := range map[int]int{1: 1, 3: 4, 8: 8, 9: 16} {
		tm, _ := newManual(t, 0, WithShards(n))
		assert.Equal(t, want, tm.Stats().Shards, "WithShards(%d)", n)
	}
	tm, _ := newManual(t, 0)
	assert.Equal(t, defaultShards(), tm.Stats().Shards)
	for _, n := range []int{-1, 1<<16 + 1} {
		_, err := New(WithShards(n))
		assert.ErrorIs(t, err, ErrInvalidConfig, "WithShards(%d)", n)
	}
}

// Every shard's tasks run at their deadline, in deadline order across the
// shards with the manual clock, and Close returns the pending ones of all
// shards in deadline order.
func TestShardsRunInDeadlineOrder(t *testing.T) {
	tm, clk := newManual(t, 0, WithShards(8))
	recs := onEveryShard(t, tm, clk)
	for i, r := range recs {
		// Shard 0 due last, shard 7 first: the order is not the shards'.
		require.NoError(t, tm.Schedule(&r.Task, time.Duration(len(recs)-i)*time.Second))
	}
	assert.Equal(t, 8, tm.Size())
	clk.Advance(4*time.Second + time.Millisecond)
	for i, r := range recs {
		due := time.Duration(len(recs)-i) * time.Second
		if due > 4*time.Second {
			assert.Empty(t, r.ran(), "shard %d: due at %v", i, due)
			continue
		}
		assert.Equal(t, []time.Duration{due}, r.ran(), "shard %d runs at its deadline", i)
	}
	assert.Equal(t, 4, tm.Size())
	pending := tm.Close()
	require.Len(t, pending, 4)
	for i, task := range pending {
		assert.Same(t, &recs[3-i].Task, task, "in deadline order")
	}
}

// A deadline placed on any shard while the clock sleeps towards a later one
// wakes it: the advancer publishes its wake-up time to every shard, also to
// those that had an earlier one and since emptied (the second round).
func TestShardsWakeTheSleepingClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm, err := New(WithShards(8))
		require.NoError(t, err)
		defer tm.Close()
		clk := tm.clock
		recs := onEveryShard(t, tm, clk)
		far := newRecorder(clk)
		require.NoError(t, tm.Schedule(&far.Task, time.Hour))
		for round := 1; round <= 2; round++ {
			for i, r := range recs {
				time.Sleep(time.Second) // the clock is asleep, waiting for the hour
				synctest.Wait()
				start := tm.Now()
				require.NoError(t, tm.Schedule(&r.Task, 5*time.Millisecond))
				time.Sleep(10 * time.Millisecond)
				synctest.Wait()
				runs := r.ran()
				require.Len(t, runs, round, "round %d: shard %d's task ran", round, i)
				late := runs[round-1] - start - 5*time.Millisecond
				assert.True(t, late >= 0 && late <= time.Millisecond, "round %d: shard %d: %v late", round, i, late)
			}
		}
		assert.Empty(t, far.ran())
	})
}

// The cap counts the tasks of every shard together.
func TestMaxPendingAcrossShards(t *testing.T) {
	tm, clk := newManual(t, 0, WithShards(4), WithMaxPending(3))
	recs := onEveryShard(t, tm, clk)
	for _, r := range recs[:3] {
		require.NoError(t, tm.Schedule(&r.Task, time.Second))
	}
	assert.ErrorIs(t, tm.Schedule(&recs[3].Task, time.Second), ErrFull)
	assert.True(t, tm.Cancel(&recs[0].Task))
	assert.NoError(t, tm.Schedule(&recs[3].Task, time.Second), "a cancelled task frees its place")
	clk.Advance(time.Second)
	for _, r := range recs[:3] {
		assert.NoError(t, tm.Schedule(&r.Task, time.Second), "expired tasks free theirs")
	}
}
