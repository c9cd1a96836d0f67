package test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// TestLongPollIsAnsweredByTheAppend has a consumer long-polling with a 5 s
// max wait receive a record produced a second after it started waiting:
// the produce completes the waiting fetch, so the record arrives within
// milliseconds of its append rather than at the end of the wait.
func TestLongPollIsAnsweredByTheAppend(t *testing.T) {
	srv := startBroker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, "long-poll", 1)

	consumer := newClient(t, srv, kgo.ConsumeTopics("long-poll"), kgo.FetchMaxWait(5*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	received := make(chan time.Time, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			if fs := consumer.PollFetches(ctx); len(fs.Records()) > 0 {
				received <- time.Now()
				return
			}
		}
	}()
	eventually(t, func() bool { return srv.PurgatorySizes()["Fetch"].Pending == 1 }, "the consumer's fetch waits in the purgatory")

	time.Sleep(time.Second) // the scenario: data arrives a second into the wait
	producer := newClient(t, srv, kgo.DefaultProduceTopic("long-poll"))
	start := time.Now()
	require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Value: []byte("now")}).FirstErr())
	acked := time.Now()
	var got time.Time
	select {
	case got = <-received:
	case <-ctx.Done():
		t.Fatal("the record never arrived")
	}
	t.Logf("record received %v after its acknowledgement, %v after the produce started", got.Sub(acked), got.Sub(start))
	assert.Less(t, got.Sub(acked), 500*time.Millisecond, "answered by the append, not by the 5s max wait")
}

// TestFetchWithoutDataReturnsAtItsMaxWait checks, on the raw wire, that a
// fetch with nothing to read is answered when its max wait passes: not
// before, and not much after.
func TestFetchWithoutDataReturnsAtItsMaxWait(t *testing.T) {
	srv := startBroker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, "idle", 1)
	c := dialRaw(t, srv)
	const maxWait = 500 * time.Millisecond
	req := fetchRequest("idle", 0, maxWait)
	start := time.Now()
	corr := c.send(req)
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(req.Version)
	require.Equal(t, corr, c.recv(resp, 10*time.Second))
	elapsed := time.Since(start)
	t.Logf("empty fetch with max wait %v answered after %v", maxWait, elapsed)
	assert.GreaterOrEqual(t, elapsed, maxWait)
	assert.Less(t, elapsed, maxWait+time.Second)
	require.Len(t, resp.Topics, 1)
	assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode)
	assert.Empty(t, resp.Topics[0].Partitions[0].RecordBatches)
}

// fetchRequest asks for a partition from offset 0, waiting up to maxWait
// for one byte.
func fetchRequest(topic string, partition int32, maxWait time.Duration) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MinBytes = int32(maxWait/time.Millisecond), 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = partition, 1<<20
	rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	return req
}

// TestThousandIdleLongPolls parks 1,000 long-polling fetches, pipelined on
// ten connections, on an idle topic: the purgatory holds one delayed
// operation and one watch entry per fetch, nothing more; and when the
// clients go away their fetches are answered and the watch entries purged,
// so the purgatory returns to empty.
func TestThousandIdleLongPolls(t *testing.T) {
	const conns, perConn, partitions = 10, 100, 10
	srv := startBroker(t, func(c *server.Config) { c.MaxInFlightPerConn = perConn })
	admin := newClient(t, srv)
	createTopic(t, admin, "idle", partitions)

	var cs []*rawConn
	for i := range conns {
		c := dialRaw(t, srv)
		for j := range perConn {
			c.send(fetchRequest("idle", int32((i*perConn+j)%partitions), time.Minute))
		}
		cs = append(cs, c)
	}
	eventually(t, func() bool { return srv.PurgatorySizes()["Fetch"].Pending == conns*perConn }, "every fetch waits")
	size := srv.PurgatorySizes()["Fetch"]
	t.Logf("with %d fetches waiting: %+v", conns*perConn, size)
	assert.Equal(t, conns*perConn, size.Watched, "one watch entry per fetch and partition")

	for _, c := range cs {
		require.NoError(t, c.nc.Close())
	}
	eventually(t, func() bool { return srv.PurgatorySizes()["Fetch"].Pending == 0 }, "closing the connections answers their fetches")
	eventually(t, func() bool { return srv.PurgatorySizes()["Fetch"].Watched == 0 }, "and the reaper purges them once nothing waits")
	t.Logf("after the clients left: %+v", srv.PurgatorySizes()["Fetch"])
	assert.Equal(t, server.PurgatorySize{}, srv.PurgatorySizes()["Produce"])
}

// TestAnswersMadeInDispatchWaitTheirTurn pipelines, on one connection, a
// fetch that waits and then requests answered while they are dispatched
// (metadata, ApiVersions), which the connection's reader writes itself:
// they are written after the fetch's answer, in request order, and once it
// is out the reader writes the next one at once.
func TestAnswersMadeInDispatchWaitTheirTurn(t *testing.T) {
	srv := startBroker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, "turn", 1)

	c := dialRaw(t, srv)
	fetchCorr := c.send(fetchRequest("turn", 0, 300*time.Millisecond))
	eventually(t, func() bool { return srv.PurgatorySizes()["Fetch"].Pending == 1 }, "the fetch waits")
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(12)
	metaCorr := c.send(meta)
	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	versionsCorr := c.send(versions)

	fresp := kmsg.NewPtrFetchResponse()
	fresp.SetVersion(12)
	require.Equal(t, fetchCorr, c.recv(fresp, 10*time.Second), "the waiting fetch's answer first")
	mresp := kmsg.NewPtrMetadataResponse()
	mresp.SetVersion(12)
	require.Equal(t, metaCorr, c.recv(mresp, 10*time.Second), "then the metadata's")
	vresp := kmsg.NewPtrApiVersionsResponse()
	vresp.SetVersion(3)
	require.Equal(t, versionsCorr, c.recv(vresp, 10*time.Second), "then the versions'")

	// Nothing owed: the next answer is written by the reader as it is made.
	versionsCorr = c.send(versions)
	require.Equal(t, versionsCorr, c.recv(vresp, 5*time.Second))
}
