package test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// TestClusterRestartFromMetadataSnapshot: a broker whose metadata log was
// snapshotted (its quorum does so on its own every few thousand records)
// restarts from the snapshot: the image is restored while the log opens,
// before the broker has finished opening it, and the broker then rejoins
// and catches up as after any restart.
func TestClusterRestartFromMetadataSnapshot(t *testing.T) {
	const topic = "snapshotted"
	c := newTestCluster(t, 3, func(cfg *server.Config) { cfg.LogDirs = t.TempDir() })
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	admin := c.client(kgo.MetadataMinAge(50 * time.Millisecond))
	c.createTopic(admin, topic, 1, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.MetadataMinAge(50*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr())

	require.NoError(t, c.broker(2).SnapshotMetadata())
	c.stop(2)
	c.start(2)

	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr())
	require.Eventually(t, func() bool { return c.replica(2, topic, 0).LogEnd == 2 },
		20*time.Second, 20*time.Millisecond, "broker 2 is back and follows")
}
