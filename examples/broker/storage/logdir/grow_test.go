package logdir_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// TestGrownTopicSurvivesRestart: a topic grown on a log dir comes back
// with its new count, the batches of its old and new partitions kept.
func TestGrownTopicSurvivesRestart(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path)
	topic, err := s.CreateTopic("orders", 1, storage.TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20})
	require.NoError(t, err)
	now := time.Now().UnixMilli()
	_, err = topic.Partitions[0].Append(batchtest.Values(now, "old"))
	require.NoError(t, err)
	grown, err := s.AddPartitions(topic.ID, 3)
	require.NoError(t, err)
	_, err = grown.Partitions[2].Append(batchtest.Values(now, "new"))
	require.NoError(t, err)
	closeFirst()

	s, _ = openStore(t, path)
	again, err := s.Topic("orders")
	require.NoError(t, err)
	assert.Equal(t, topic.ID, again.ID)
	require.Len(t, again.Partitions, 3)
	assert.Equal(t, []string{"old"}, values(t, again.Partitions[0]))
	assert.Empty(t, values(t, again.Partitions[1]))
	assert.Equal(t, []string{"new"}, values(t, again.Partitions[2]))
	_, err = os.Stat(filepath.Join(path, "orders-2"))
	assert.NoError(t, err, "the new partition has its directory")
}
