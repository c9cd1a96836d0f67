package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
	// The cleaner runs on its own: wait, bounded, for its pass.
	var got []keyedAt
	for deadline := time.Now().Add(20 * time.Second); ; {
		got = consumeCompacted(t, srv.Addr().String(), "compacted", end)
		if len(dupKeys(got)) == 10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	assert.ElementsMatch(t, want, dupKeys(got), "each key's latest value, at its original offset")
	assert.Len(t, got, 10+40, "and the keys written once")
	cl.Close()
	stop()

	srv, _ = runBroker(t, cfg)
	after := consumeCompacted(t, srv.Addr().String(), "compacted", end)
	assert.Equal(t, got, after, "the same records at the same offsets after a restart")
}
