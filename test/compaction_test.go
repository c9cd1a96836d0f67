package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// keyedAt is a record as a consumer reads it: key, value, offset.
type keyedAt struct {
	Key, Value string
	Offset     int64
}

// consumeCompacted reads topic's partition 0 from the start to end, with a
// fresh client of addr.
func consumeCompacted(t *testing.T, addr, topic string, end int64) []keyedAt {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []keyedAt
	for {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consuming %s to %d", topic, end)
		require.Empty(t, fs.Errors())
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, keyedAt{string(r.Key), string(r.Value), r.Offset})
			done = done || r.Offset == end-1
		})
		if done {
			return out
		}
	}
}

// waitCompacted consumes topic from the start to end until it holds want
// records, which the broker's cleaner leaves on its own, or 20 s have
// passed, and returns the last records read.
func waitCompacted(t *testing.T, addr, topic string, end int64, want int) []keyedAt {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := consumeCompacted(t, addr, topic, end)
		if len(got) == want || time.Now().After(deadline) {
			return got
		}
	}
}

// TestCompactedTopicEndToEnd: a topic created with cleanup.policy=compact
// by kadm, with log.dirs and small segments; ten keys written over
// twenty times each, then other keys that push the last values out of
// the active segment. The broker's own cleaner (every 100 ms) leaves each
// of the ten keys' latest value, at the offset it was written at, and a
// consumer from the start reads exactly that, before and after a
// restart. A record without a key is refused, as Kafka refuses it.
func TestCompactedTopicEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cfg := durableConfig(dir)
	cfg.LogSegmentBytes = 2048
	cfg.LogCleanerBackoff = 100 * time.Millisecond
	srv, stop := runBroker(t, cfg)
	cl := newClient(t, srv)
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(testCtx(t), 1, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, "compacted")
	require.NoError(t, err)
	require.NoError(t, resp.Err)

	latest := map[string]keyedAt{}
	pad := string(make([]byte, 100))
	for round := range 20 {
		var recs []*kgo.Record
		for k := range 10 {
			recs = append(recs, &kgo.Record{Topic: "compacted", Key: fmt.Appendf(nil, "k%d", k),
				Value: fmt.Appendf(nil, "k%d-%d%s", k, round, pad)})
		}
		rs := cl.ProduceSync(testCtx(t), recs...)
		require.NoError(t, rs.FirstErr())
		for _, r := range rs {
			latest[string(r.Record.Key)] = keyedAt{string(r.Record.Key), string(r.Record.Value), r.Record.Offset}
		}
	}
	for i := range 40 { // about two segments of keys written once
		rs := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "compacted", Key: fmt.Appendf(nil, "f%d", i), Value: []byte(pad)})
		require.NoError(t, rs.FirstErr())
	}
	end := int64(200 + 40)

	rs := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "compacted", Value: []byte("no key")})
	assert.ErrorIs(t, rs.FirstErr(), kerr.InvalidRecord, "a compacted topic takes no record without a key")

	want := make([]keyedAt, 0, 10)
	for k := range 10 {
		want = append(want, latest[fmt.Sprintf("k%d", k)])
	}
	dupKeys := func(recs []keyedAt) []keyedAt {
		var out []keyedAt
		for _, r := range recs {
			if r.Key[0] == 'k' {
				out = append(out, r)
			}
		}
		return out
	}
	got := waitCompacted(t, srv.Addr().String(), "compacted", end, 10+40)
	assert.ElementsMatch(t, want, dupKeys(got), "each key's latest value, at its original offset")
	assert.Len(t, got, 10+40, "and the keys written once")
	cl.Close()
	stop()

	srv, _ = runBroker(t, cfg)
	after := consumeCompacted(t, srv.Addr().String(), "compacted", end)
	assert.Equal(t, got, after, "the same records at the same offsets after a restart")
}

// logDirSize returns the bytes broker id holds of topic's partition 0, as
// its DescribeLogDirs says, or -1 if it does not say.
func logDirSize(cl *kgo.Client, id int32, topic string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrDescribeLogDirsRequest().RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return -1
	}
	for _, d := range resp.Dirs {
		for _, tp := range d.Topics {
			if tp.Topic != topic {
				continue
			}
			for _, p := range tp.Partitions {
				if p.Partition == 0 {
					return p.Size
				}
			}
		}
	}
	return -1
}

// TestCompactedTopicOnThreeBrokers: with three replicas in log.dirs, and
// the topic's own segment.bytes, each broker's cleaner cleans its own
// copy (a follower's shrinks as the leader's does, though nothing tells
// it to), and a consumer reads each key's latest value at the offset it
// was written at.
func TestCompactedTopicOnThreeBrokers(t *testing.T) {
	c := startCluster(t, 3, clusterTimings, func(cfg *server.Config) {
		cfg.LogCleanerBackoff = 100 * time.Millisecond
		cfg.LogDirs = t.TempDir()
	})
	cl := c.client()
	c.createTopic(cl, "compacted", 1, 3, map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
		"segment.bytes": "1024"})
	latest := map[string]int64{}
	for round := range 20 {
		var recs []*kgo.Record
		for k := range 10 {
			recs = append(recs, &kgo.Record{Topic: "compacted", Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "%d", round)})
		}
		rs := cl.ProduceSync(testCtx(t), recs...)
		require.NoError(t, rs.FirstErr())
		for _, r := range rs {
			latest[string(r.Record.Key)] = r.Record.Offset
		}
	}
	for i := range 30 { // keys written once, after the last round: two segments
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: "compacted", Key: fmt.Appendf(nil, "f%d", i)}).FirstErr())
	}

	got := waitCompacted(t, c.seeds()[0], "compacted", 200+30, 10+30)
	require.Len(t, got, 10+30, "the leader's cleaner leaves one record a key")
	for _, r := range got[:10] {
		assert.Equal(t, latest[r.Key], r.Offset, "%s: its latest value, at its offset", r.Key)
		assert.Equal(t, "19", r.Value)
	}
	// Every replica cleans its own log: within a few passes each holds
	// about what the leader holds.
	leaderSize := int64(0)
	require.Eventually(t, func() bool {
		sizes := make([]int64, 3)
		for id := range int32(3) {
			sizes[id] = logDirSize(cl, id+1, "compacted")
		}
		leaderSize = slices.Min(sizes)
		return leaderSize > 0 && slices.Max(sizes) == leaderSize
	}, 20*time.Second, 100*time.Millisecond, "every replica cleaned to the same size")
	assert.Less(t, leaderSize, int64(20*10*70), "a fraction of the 200 records' batches")
}
