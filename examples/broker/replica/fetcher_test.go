package replica

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// fetcherFixture is broker 2 following broker 1, the leader of partition
// 0 of a topic on [1 2], through a fake leader: the leader's partition in
// a store of its own, answering the follower's fetches from its log.
type fetcherFixture struct {
	fe       *Fetcher
	im       *metadata.Image
	leader   *storage.Partition // the leader's replica
	follower *storage.Partition // broker 2's
	store    *storage.Store     // broker 2's
	// inFlight runs while the leader answers a fetch: what lands between
	// the follower's request and its answer.
	inFlight func()
}

func newFetcherFixture(t *testing.T) *fetcherFixture {
	t.Helper()
	f := &fetcherFixture{im: metadata.Empty()}
	mt, err := metadata.Place(f.im, []int32{1, 2}, "t", metadata.TopicID{1}, 1, 2, nil)
	require.NoError(t, err)
	f.im = f.im.Apply(1, &metadata.Record{CreateTopics: []*metadata.Topic{mt}})
	f.leader, _ = newStoredPartition(t, mt.ID)
	var store *storage.Store
	f.follower, store = newStoredPartition(t, mt.ID)
	f.store = store
	f.fe = NewFetcher(FetcherConfig{Self: 2, MinBytes: 1, MaxBytes: 1 << 20}, f, store, nil)
	return f
}

// newStoredPartition returns partition 0 of topic t, of id id and
// replication factor 2, in a store of its own, and the store.
func newStoredPartition(t *testing.T, id metadata.TopicID) (*storage.Partition, *storage.Store) {
	t.Helper()
	store, err := storage.New(storage.WithRetentionCheckInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	topic, err := store.CreateTopicSpec(storage.TopicSpec{Name: "t", ID: storage.TopicID(id), Partitions: 1,
		Config: store.TopicDefaults(), ReplicationFactor: 2})
	require.NoError(t, err)
	return topic.Partitions[0], store
}

func (f *fetcherFixture) Image() *metadata.Image { return f.im }

// Request answers the follower's fetch from the leader's log; it knows no
// other request.
func (f *fetcherFixture) Request(_ context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	fr, ok := req.(*kmsg.FetchRequest)
	if !ok {
		return nil, fmt.Errorf("the fake leader does not answer %T", req)
	}
	if f.inFlight != nil {
		f.inFlight()
	}
	resp := kmsg.NewPtrFetchResponse()
	for _, rt := range fr.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			r, err := f.leader.Read(rp.FetchOffset, storage.ReadReplica, int(rp.PartitionMaxBytes), true)
			if err != nil {
				return nil, err
			}
			o, err := f.leader.Offsets()
			if err != nil {
				return nil, err
			}
			sp.RecordBatches, sp.HighWatermark = r.Records, o.HighWatermark
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// TestFetcherDropsAnAnswerWhoseEpochMoved: a fetch made at leader epoch 1
// whose answer comes back after the follower's partition moved to epoch 2
// is dropped, nothing appended, and the partition is to be reconciled
// again; one whose epoch held is appended, with the leader's high
// watermark.
func TestFetcherDropsAnAnswerWhoseEpochMoved(t *testing.T) {
	tests := []struct {
		name     string
		inFlight func(f *fetcherFixture)
		wantEnd  int64
		wantHW   int64
		wantKept bool // still reconciled at epoch 1
	}{
		{"the epoch held", nil, 2, 2, true},
		{"the epoch moved in flight", func(f *fetcherFixture) { f.follower.SetLeaderEpoch(2) }, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFetcherFixture(t)
			for _, v := range []string{"a", "b"} {
				_, err := f.leader.Append(batchtest.Values(1, v))
				require.NoError(t, err)
			}
			require.True(t, f.leader.AdvanceHighWatermark(2))
			f.follower.SetLeaderEpoch(1)
			if tt.inFlight != nil {
				f.inFlight = func() { tt.inFlight(f) }
			}
			reconciled := map[*storage.Partition]int32{f.follower: 1}
			parts := f.fe.followedFrom(1)
			require.Equal(t, []*storage.Partition{f.follower}, parts, "broker 2 follows the partition from broker 1")

			_, err := f.fe.fetchOnce(context.Background(), 1, parts, reconciled, map[*storage.Partition]bool{})
			require.NoError(t, err)
			o, err := f.follower.Offsets()
			require.NoError(t, err)
			assert.Equal(t, tt.wantEnd, o.LogEnd, "the follower's log end")
			assert.Equal(t, tt.wantHW, o.HighWatermark, "the follower's high watermark")
			_, kept := reconciled[f.follower]
			assert.Equal(t, tt.wantKept, kept, "whether the partition stays reconciled")
			if tt.wantEnd > 0 {
				want, err := f.leader.Read(0, storage.ReadReplica, 1<<20, true)
				require.NoError(t, err)
				got, err := f.follower.Read(0, storage.ReadReplica, 1<<20, true)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(want.Records, got.Records), "the leader's batches, byte for byte")
			}
		})
	}
}
