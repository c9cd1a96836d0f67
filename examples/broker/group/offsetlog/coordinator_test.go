package offsetlog_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/group/offsetlog"
	"github.com/gopurgatory/purgatory/timer"
)

// coordinator runs a coordinator on the offsets log in dir, on a manual
// clock, whose wall clock reads wall when it starts; stop closes both, as
// a broker shutting down does.
func coordinator(t *testing.T, dir string, wall time.Time, opts ...group.Option) (c *group.Coordinator, clk *timer.ManualClock, stop func()) {
	t.Helper()
	l, err := offsetlog.Open(dir, offsetlog.WithCompactAfter(50))
	require.NoError(t, err)
	clk = timer.NewManualClock(0)
	c, err = group.New(append([]group.Option{group.WithOffsetStore(l), group.WithClock(clk),
		group.WithWallClock(func() time.Time { return wall })}, opts...)...)
	require.NoError(t, err)
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			require.NoError(t, c.Close())
			require.NoError(t, l.Close())
		}
	}
	t.Cleanup(stop)
	return c, clk, stop
}

func commitAll(t *testing.T, c *group.Coordinator, g string, retention time.Duration, offsets ...int64) {
	t.Helper()
	req := group.CommitRequest{Group: g, Generation: -1, Retention: retention}
	for p, o := range offsets {
		req.Offsets = append(req.Offsets, group.CommitOffset{Topic: "t", Partition: int32(p), Offset: o, LeaderEpoch: -1, Metadata: "md"})
	}
	for _, err := range c.CommitOffsets(req) {
		require.Nil(t, err)
	}
}

func fetched(t *testing.T, c *group.Coordinator, g string, partitions int) []int64 {
	t.Helper()
	var tps []group.TopicPartition
	for p := range partitions {
		tps = append(tps, group.TopicPartition{Topic: "t", Partition: int32(p)})
	}
	got, err := c.FetchOffsets(g, tps)
	require.Nil(t, err)
	out := make([]int64, len(got))
	for i, o := range got {
		out[i] = o.Offset
	}
	return out
}

var wall = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// TestCoordinatorRestartsOnTheLog: commits, deletions and expiries made by
// one coordinator are what the next finds in the same directory.
func TestCoordinatorRestartsOnTheLog(t *testing.T) {
	dir := t.TempDir()
	c, clk, stop := coordinator(t, dir, wall, group.WithOffsetsRetention(time.Hour))
	commitAll(t, c, "kept", -1, 10, 20, 30)
	commitAll(t, c, "short", 10*time.Minute, 5)
	commitAll(t, c, "deleted", -1, 1)
	gerr, errs := c.DeleteOffsets("kept", []group.TopicPartition{{Topic: "t", Partition: 1}})
	require.Nil(t, gerr)
	require.Equal(t, []*kerr.Error{nil}, errs)
	require.Equal(t, []*kerr.Error{nil}, c.DeleteGroups([]string{"deleted"}))
	clk.Advance(10 * time.Minute)
	assert.Equal(t, []int64{-1}, fetched(t, c, "short", 1), "expired")
	stop()

	again, clk2, stop := coordinator(t, dir, wall.Add(20*time.Minute), group.WithOffsetsRetention(time.Hour))
	assert.Equal(t, []int64{10, -1, 30}, fetched(t, again, "kept", 3), "committed, one deleted")
	got, err := again.FetchOffsets("kept", []group.TopicPartition{{Topic: "t", Partition: 2}})
	require.Nil(t, err)
	assert.Equal(t, group.PartitionOffset{Topic: "t", Partition: 2, Offset: 30, LeaderEpoch: -1, Metadata: "md"}, got[0])
	assert.Equal(t, []int64{-1}, fetched(t, again, "short", 1), "the expiry was recorded")
	assert.Equal(t, []int64{-1}, fetched(t, again, "deleted", 1), "the deletion was recorded")
	_, found, _ := again.DescribeGroup("deleted")
	assert.False(t, found)

	// A simple consumer's offsets expire an hour after their commit,
	// wall-clock: 40 minutes into this run.
	clk2.Advance(39 * time.Minute)
	assert.Equal(t, []int64{10, -1, 30}, fetched(t, again, "kept", 3))
	clk2.Advance(time.Minute)
	assert.Equal(t, []int64{-1, -1, -1}, fetched(t, again, "kept", 3))
	stop()

	third, _, _ := coordinator(t, dir, wall.Add(2*time.Hour))
	assert.Equal(t, []int64{-1, -1, -1}, fetched(t, third, "kept", 3), "and that expiry too")
}

func TestCoordinatorCompactsTheLog(t *testing.T) {
	dir := t.TempDir()
	c, _, stop := coordinator(t, dir, wall)
	for i := range 200 {
		commitAll(t, c, "g", -1, int64(i), int64(2*i))
	}
	stop()
	st, err := os.Stat(filepath.Join(dir, offsetlog.FileName))
	require.NoError(t, err)
	assert.Less(t, st.Size(), int64(100*150), "200 commits of 2 offsets, compacted to about 50 records at most")
	again, _, _ := coordinator(t, dir, wall)
	assert.Equal(t, []int64{199, 398}, fetched(t, again, "g", 2), "the latest of each, after compactions")
}
