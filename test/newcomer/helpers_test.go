package newcomer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// impl is one version of a program: its sub-test and sub-benchmark label,
// and how to build it, closed at the end of the test.
type impl[T interface{ Close() }] struct {
	name string
	make func(testing.TB) T
}

func (im impl[T]) new(tb testing.TB) T {
	tb.Helper()
	v := im.make(tb)
	tb.Cleanup(v.Close)
	return v
}

var longPolls = []impl[LongPoll]{
	{name: "purgatory", make: func(tb testing.TB) LongPoll {
		lp, err := newPurgatoryLongPoll()
		require.NoError(tb, err)
		return lp
	}},
	{name: "naive", make: func(testing.TB) LongPoll { return newNaiveLongPoll() }},
}

var watchdogs = []impl[Watchdogs]{
	{name: "purgatory", make: func(tb testing.TB) Watchdogs {
		w, err := newTimerWatchdogs()
		require.NoError(tb, err)
		return w
	}},
	{name: "naive", make: func(testing.TB) Watchdogs { return naiveWatchdogs{} }},
}

var counters = []impl[Counters]{
	{name: "purgatory", make: func(tb testing.TB) Counters {
		c, err := newPurgatoryCounters()
		require.NoError(tb, err)
		return c
	}},
	{name: "naive", make: func(testing.TB) Counters { return newNaiveCounters() }},
}

// answered reports whether w has been answered, without waiting.
func answered(w Waiter) bool {
	select {
	case <-w.Done():
		return true
	default:
		return false
	}
}
