package txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	metalog "github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// hosted is a transaction coordinator hosted on the coordinator runtime
// of a broker alone, in memory, as the broker hosts it: its metadata log,
// controller, replica manager and store, and no network.
type hosted struct {
	c       *Coordinator
	topic   *coordinator.Topic
	store   *storage.Store
	rm      *replica.Manager
	markers *fakeMarkers
}

func newHosted(t *testing.T) *hosted {
	t.Helper()
	h := &hosted{markers: &fakeMarkers{auto: written}}
	var err error
	h.store, err = storage.New()
	require.NoError(t, err)
	member, err := cluster.New(cluster.Config{Brokers: cluster.Single(cluster.Node{ID: 1, Host: "127.0.0.1", Port: 9092}),
		ClusterID: "txn-test", HeartbeatInterval: 2 * time.Second, SessionTimeout: 9 * time.Second,
		ElectionTimeout: time.Second})
	require.NoError(t, err)
	h.rm, err = replica.NewManager(replica.Config{Member: member, Store: h.store, FetchMaxBytes: 1 << 20,
		LagTimeMax: 30 * time.Second, FetchPurgeInterval: 1000, ProducePurgeInterval: 1000,
		Fetcher: replica.FetcherConfig{WaitMax: 500 * time.Millisecond, MinBytes: 1, MaxBytes: 1 << 20, Backoff: time.Second}})
	require.NoError(t, err)
	rt := coordinator.New(coordinator.Config{Replicas: h.rm, Member: member,
		CreateTopic: func(name string, partitions int32, rf int16, configs map[string]string) error {
			ctrl := member.ActiveController()
			if ctrl == nil {
				return errors.New("no active controller yet")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := ctrl.CreateTopic(ctx, controller.TopicSpec{Name: name, Partitions: partitions,
				ReplicationFactor: rf, Configs: configs})
			return err
		}})
	var next int64
	h.c, h.topic, err = Host(rt,
		ServiceConfig{Partitions: 3}, // Kafka's replication factor and min.insync.replicas, capped
		Config{Markers: h.markers, NextProducerID: func() (int64, error) { next++; return next, nil },
			OffsetsPartition: func(g string) int32 { return coordinator.PartitionFor(g, 50) }})
	require.NoError(t, err)
	require.NoError(t, member.Open(func(before, after *metalog.Image, rec *metalog.Record) {
		h.rm.Apply(before, after, rec)
		rt.Follow(after)
	}, h.rm.Seed()))
	h.rm.Start()
	t.Cleanup(func() {
		require.NoError(t, h.c.Close())
		require.NoError(t, member.Close(context.Background(), false))
		rt.Wait()
		h.rm.Close()
		require.NoError(t, h.store.Close())
	})
	// The first lookup creates the topic, which the broker, its only
	// replica, then loads.
	require.Eventually(t, func() bool { return h.topic.KeyError("tx") == nil }, 10*time.Second, time.Millisecond)
	return h
}

// await waits for a callback's answer: the appends are answered from the
// Produce purgatory, on its goroutines.
func await[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no answer")
		panic("unreachable")
	}
}

// TestHostedOnTheRuntime: on the real runtime, a transaction's changes are
// records of its __transaction_state partition, replicated (with
// min.insync.replicas capped for a broker alone) before they are
// answered; the markers carry the partition's leader epoch; a partition
// loaded again (as by a new leader) has its transactions back, and a
// PrepareCommit has its markers written again and completes.
func TestHostedOnTheRuntime(t *testing.T) {
	h := newHosted(t)
	idx := coordinator.PartitionFor("tx", 3)
	p, err := h.store.Partition(coordinator.TransactionTopic, idx)
	require.NoError(t, err)
	assert.Equal(t, int32(1), p.Topic().Config().MinInsyncReplicas, "min.insync.replicas capped at the replication factor")
	st, _ := h.rm.State(p)

	inits := make(chan initResult, 1)
	h.c.InitProducerID("tx", time.Minute, -1, -1, func(pid int64, epoch int16, err *kerr.Error) {
		inits <- initResult{pid, epoch, err}
	})
	r := await(t, inits)
	require.Nil(t, r.err)
	errs := make(chan *kerr.Error, 1)
	h.c.AddPartitions("tx", r.pid, r.epoch, []TopicPartition{tp("orders", 0)}, func(err *kerr.Error) { errs <- err })
	require.Nil(t, await(t, errs))
	o, err := p.Offsets()
	require.NoError(t, err)
	assert.Equal(t, o.LogEnd, o.HighWatermark, "answered once replicated")

	h.markers.setAuto(nil)
	h.c.EndTxn("tx", r.pid, r.epoch, true, func(err *kerr.Error) { errs <- err })
	require.Nil(t, await(t, errs))
	require.Eventually(t, func() bool { return len(h.markers.all()) == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, Marker{ProducerID: r.pid, ProducerEpoch: r.epoch, CoordinatorEpoch: st.LeaderEpoch, Commit: true},
		h.markers.all()[0].m)

	// The partition moves (here: loaded again at the same epoch): the
	// PrepareCommit comes back and its markers are written again.
	h.topic.Reload(idx, nil)
	h.markers.answer(written) // the old coordinator's: without effect
	d := h.c.Describe([]string{"tx"})[0]
	require.Nil(t, d.Err)
	assert.Equal(t, PrepareCommit, d.State)
	require.Eventually(t, func() bool { return len(h.markers.all()) == 2 }, 10*time.Second, time.Millisecond)
	h.markers.answer(written)
	require.Eventually(t, func() bool { return h.c.Describe([]string{"tx"})[0].State == CompleteCommit },
		10*time.Second, time.Millisecond)

	h.topic.Reload(idx, nil)
	d = h.c.Describe([]string{"tx"})[0]
	assert.Equal(t, Description{TxnID: "tx", State: CompleteCommit, ProducerID: r.pid, ProducerEpoch: r.epoch,
		Timeout: time.Minute, Started: d.Started}, d)
	assert.False(t, d.Started.IsZero())
}
