package test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
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

// deleteRecordsBefore deletes topic's partition 0 records before offset
// with kadm, and returns the partition's answer.
func deleteRecordsBefore(t *testing.T, cl *kgo.Client, topic string, offset int64) kadm.DeleteRecordsResponse {
	t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: offset})
	res, err := kadm.NewClient(cl).DeleteRecords(testCtx(t), os)
	require.NoError(t, err)
	r, ok := res.Lookup(topic, 0)
	require.True(t, ok, "an answer for %s-0", topic)
	return r
}

// startOffset returns topic's partition 0 log start, as ListOffsets'
// earliest answers it.
func startOffset(t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	listed, err := kadm.NewClient(cl).ListStartOffsets(testCtx(t), topic)
	require.NoError(t, err)
	o, ok := listed.Lookup(topic, 0)
	require.True(t, ok)
	require.NoError(t, o.Err)
	return o.Offset
}

// produceValues produces values to topic's partition 0, in order, each
// acknowledged before the next.
func produceValues(t *testing.T, cl *kgo.Client, topic string, values ...string) {
	t.Helper()
	for _, v := range values {
		require.NoError(t, cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}).FirstErr())
	}
}

// consumeFromStart reads n records of topic from its start, as a new
// consumer does, and returns their offsets.
func consumeFromStart(t *testing.T, seeds []string, topic string, n int) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var offsets []int64
	for len(offsets) < n {
		fs := cl.PollFetches(testCtx(t))
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { offsets = append(offsets, r.Offset) })
	}
	return offsets
}

func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("r%02d", i)
	}
	return out
}

// TestDeleteRecordsOneBroker: kadm's DeleteRecords on a broker alone,
// with a log dir: answered at once with the low watermark at the offset,
// a consumer from the start begins there and ListOffsets' earliest
// answers it, before and after a restart.
func TestDeleteRecordsOneBroker(t *testing.T) {
	cfg := server.Default()
	cfg.Listener, cfg.LogDirs = "127.0.0.1:0", t.TempDir()
	srv, stop := runBroker(t, cfg)
	cl := newClient(t, srv, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "gone", 1)
	produceValues(t, cl, "gone", numbered(10)...)

	r := deleteRecordsBefore(t, cl, "gone", 5)
	require.NoError(t, r.Err)
	assert.Equal(t, int64(5), r.LowWatermark)
	assert.Equal(t, int64(5), startOffset(t, cl, "gone"))
	seeds := []string{srv.Addr().String()}
	assert.Equal(t, []int64{5, 6, 7, 8, 9}, consumeFromStart(t, seeds, "gone", 5), "the records before 5 are gone")

	r = deleteRecordsBefore(t, cl, "gone", 11)
	assert.ErrorIs(t, r.Err, kerr.OffsetOutOfRange, "past the high watermark")
	stop()

	cfg.Listener = srv.Addr().String()
	srv, _ = runBroker(t, cfg)
	cl = newClient(t, srv)
	assert.Equal(t, int64(5), startOffset(t, cl, "gone"), "after a restart")
	assert.Equal(t, []int64{5, 6, 7, 8, 9}, consumeFromStart(t, seeds, "gone", 5))
}

// TestDeleteRecordsCluster: on three brokers, the answer comes once every
// replica's log start is at the offset, exactly (the followers take it
// from their fetches), and records before it are gone for consumers;
// DeleteRecords of the high watermark, again and again, while an
// acks=all producer writes, leaves every produce acknowledged.
func TestDeleteRecordsCluster(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.ReplicaFetchWaitMax = 100 * time.Millisecond })
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	c.createTopic(cl, "trimmed", 1, 3, nil)
	produceValues(t, cl, "trimmed", numbered(20)...)

	r := deleteRecordsBefore(t, cl, "trimmed", 7)
	require.NoError(t, r.Err)
	assert.Equal(t, int64(7), r.LowWatermark)
	for id := int32(1); id <= 3; id++ {
		assert.Equal(t, int64(7), c.replica(id, "trimmed", 0).LogStart, "broker %d's log start, when the answer comes", id)
	}
	assert.Equal(t, int64(7), startOffset(t, cl, "trimmed"))
	assert.Equal(t, int64(7), consumeFromStart(t, c.seeds(), "trimmed", 13)[0])

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		produced int
		errs     []error
	)
	ctx, cancel := context.WithCancel(testCtx(t))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			err := cl.ProduceSync(ctx, &kgo.Record{Topic: "trimmed", Partition: 0, Value: fmt.Appendf(nil, "load%d", i)}).FirstErr()
			mu.Lock()
			if err == nil {
				produced++
			} else if ctx.Err() == nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		}
	}()
	last := int64(7)
	for range 5 {
		r := deleteRecordsBefore(t, cl, "trimmed", -1)
		require.NoError(t, r.Err)
		assert.GreaterOrEqual(t, r.LowWatermark, last, "the high watermark, never back")
		last = r.LowWatermark
		for id := int32(1); id <= 3; id++ {
			assert.GreaterOrEqual(t, c.replica(id, "trimmed", 0).LogStart, last, "broker %d", id)
		}
	}
	cancel()
	wg.Wait()
	assert.Empty(t, errs, "every acks=all produce acknowledged while records were deleted")
	assert.Positive(t, produced)
}

// TestDeleteRecordsFollowerStartsInsideABatch: the log start is put
// inside a batch of five records; a follower restarted empty (in memory)
// is behind it, starts its log at the leader's log start and fetches from
// there: it takes the batch holding it whole, keeps the log start exact,
// and is back in the ISR.
func TestDeleteRecordsFollowerStartsInsideABatch(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.ReplicaFetchWaitMax = 100 * time.Millisecond })
	cl := c.client()
	c.createTopic(cl, "inside", 1, 3, nil)
	leader := c.replica(1, "inside", 0).Leader
	id := topicID(t, cl, "inside")
	for i := range 2 {
		sp := produceBatch(t, cl.Broker(int(leader)), id, "inside", 0, idempotentBatch(-1, -1, numbered(5)...))
		require.Zero(t, sp.ErrorCode, "batch %d: %v", i, kerr.ErrorForCode(sp.ErrorCode))
	}
	r := deleteRecordsBefore(t, cl, "inside", 7) // inside the batch 5-9
	require.NoError(t, r.Err)
	assert.Equal(t, int64(7), r.LowWatermark)

	follower := leader%3 + 1
	c.stop(follower)
	c.start(follower)
	require.Eventually(t, func() bool {
		ri, err := c.broker(follower).Replica("inside", 0)
		return err == nil && ri.LogEnd == 10 && slices.Contains(c.replica(leader, "inside", 0).ISR, follower)
	}, 10*time.Second, 10*time.Millisecond, "broker %d, restarted empty, catches up and rejoins the ISR", follower)
	assert.Equal(t, int64(7), c.replica(follower, "inside", 0).LogStart, "its log start is the leader's, exactly")
}

// TestDeleteRecordsWaitsForAPausedFollower: a follower frozen with SIGSTOP
// reports no log start: the leader moves its own at once, but the answer
// waits for the frozen replica and, at the request's timeout, is
// REQUEST_TIMED_OUT. Once the follower's session expires and it leaves the
// ISR (fenced: no longer a live broker), the same request succeeds with
// the two replicas left.
func TestDeleteRecordsWaitsForAPausedFollower(t *testing.T) {
	c := startProcessCluster(t, "--broker.heartbeat.interval.ms", "250", "--broker.session.timeout.ms", "3000",
		"--controller.quorum.election.timeout.ms", "300", "--replica.fetch.backoff.ms", "50",
		"--replica.fetch.wait.max.ms", "100")
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	c.createTopic(cl, "paused", 1, nil)
	produceValues(t, cl, "paused", numbered(10)...)

	meta := kmsg.NewPtrMetadataRequest()
	resp, err := meta.RequestWith(testCtx(t), cl)
	require.NoError(t, err)
	p0 := c.awaitPartition0(cl, 1, "paused", 10*time.Second, "every replica in sync",
		func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader > 0 && len(p.ISR) == 3 })
	// Freeze a follower that is not the active controller if there is
	// one: its session then expires at the controller's own pace.
	frozen := int32(-1)
	for _, id := range p0.Replicas {
		if id != p0.Leader && (frozen < 0 || id != resp.ControllerID) {
			frozen = id
		}
	}
	require.NoError(t, c.procs[frozen].cmd.Process.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { _ = c.procs[frozen].cmd.Process.Signal(syscall.SIGCONT) })
	t.Logf("froze broker %d, a follower of broker %d", frozen, p0.Leader)

	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 500 // well within the 3s session
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "paused"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = 5
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	dr, err := req.RequestWith(testCtx(t), cl.Broker(int(p0.Leader)))
	require.NoError(t, err)
	assert.Equal(t, kerr.RequestTimedOut.Code, dr.Topics[0].Partitions[0].ErrorCode,
		"the frozen follower holds the low watermark back: got %v", kerr.ErrorForCode(dr.Topics[0].Partitions[0].ErrorCode))
	assert.Less(t, dr.Topics[0].Partitions[0].LowWatermark, int64(5))
	assert.Equal(t, int64(5), startOffset(t, cl, "paused"), "the leader moved its log start at once")

	c.awaitPartition0(cl, p0.Leader, "paused", 30*time.Second, "the frozen follower leaves the ISR",
		func(p kmsg.MetadataResponseTopicPartition) bool { return !slices.Contains(p.ISR, frozen) })
	r := deleteRecordsBefore(t, cl, "paused", 5)
	require.NoError(t, r.Err)
	assert.Equal(t, int64(5), r.LowWatermark, "the live replicas have dropped the records")
}
