package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// TestDeletedTopicIsNotResurrected deletes a topic that holds records and
// at once produces to its name again through a client that lets Metadata
// auto-create it, as a producer still running against the deleted topic
// does. Kafka creates a new topic, with a new id and an empty log: none of
// the deleted topic's records may come back, in memory or in log.dirs,
// on one broker or on three (where the brokers learn of the deletion at
// different moments).
func TestDeletedTopicIsNotResurrected(t *testing.T) {
	for _, tc := range []struct {
		name    string
		brokers int
		dirs    bool
	}{{"memory", 1, false}, {"log.dirs", 1, true}, {"cluster", 3, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tweak := func(cfg *server.Config) {
				clusterTimings(cfg)
				cfg.AutoCreateTopics, cfg.NumPartitions, cfg.DefaultReplication = true, 1, int16(tc.brokers)
				if tc.dirs {
					cfg.LogDirs = t.TempDir()
				}
			}
			var (
				seeds   []string
				cluster *testCluster
			)
			if tc.brokers == 1 {
				seeds = []string{startBroker(t, tweak).Addr().String()}
			} else {
				cluster = startCluster(t, tc.brokers, tweak)
				seeds = cluster.seeds()
			}
			producer := func() *kgo.Client {
				cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.AllowAutoTopicCreation(),
					kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("phoenix"))
				require.NoError(t, err)
				t.Cleanup(cl.Close)
				return cl
			}
			cl := producer()
			for i := range 3 {
				require.NoError(t, cl.ProduceSync(testCtx(t), kgo.StringRecord(fmt.Sprint("old-", i))).FirstErr())
			}
			adm := kadm.NewClient(cl)
			before, err := adm.ListTopics(testCtx(t), "phoenix")
			require.NoError(t, err)
			rs, err := adm.DeleteTopics(testCtx(t), "phoenix")
			require.NoError(t, err)
			require.NoError(t, rs["phoenix"].Err)
			if cluster != nil {
				// As in Kafka, DeleteTopics answers once the controller has
				// committed the deletion; each broker applies it a moment
				// later, and a Metadata answered before that lists the old
				// topic, whose id kgo then keeps (it never adopts a new id
				// for a name it holds). Wait for every broker, as a Kafka
				// user waits for the deletion to propagate.
				for id := int32(1); id <= int32(tc.brokers); id++ {
					require.Eventually(t, func() bool { return !cluster.hasTopic(cl, id, "phoenix") },
						10*time.Second, 5*time.Millisecond, "broker %d drops the topic", id)
				}
			}

			// A client that knew the old topic refuses the new one's id
			// (kgo fails it with UNKNOWN_TOPIC_ID until the topic is purged
			// from the client), so the name is produced to by a new one.
			fresh := producer()
			require.NoError(t, fresh.ProduceSync(testCtx(t), kgo.StringRecord("new")).FirstErr())
			// kgo answers a Metadata request from what it learned a moment
			// ago: the new topic is looked at through the new client.
			after, err := kadm.NewClient(fresh).ListTopics(testCtx(t), "phoenix")
			require.NoError(t, err)
			require.NotEqual(t, before["phoenix"].ID, after["phoenix"].ID, "a new topic, with a new id")

			got := consumePartition(t, seeds, "phoenix", 0, 1)
			require.Equal(t, []string{"new"}, got, "the new topic holds only what was produced to it")
			ends, err := adm.ListEndOffsets(testCtx(t), "phoenix")
			require.NoError(t, err)
			o, _ := ends.Lookup("phoenix", 0)
			require.Equal(t, int64(1), o.Offset, "the new topic's log starts empty")
		})
	}
}
