package logdir_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// TestAlteredConfigSurvivesRestart: a topic whose config changed on a log
// dir comes back with the new config, and its grown count.
func TestAlteredConfigSurvivesRestart(t *testing.T) {
	path := t.TempDir()
	s, closeFirst := openStore(t, path)
	topic, err := s.CreateTopic("orders", 1, storage.TopicConfig{Retention: -1, RetentionBytes: -1, MaxMessageBytes: 1 << 20})
	require.NoError(t, err)
	_, err = s.AddPartitions(topic.ID, 2)
	require.NoError(t, err)
	cfg := storage.TopicConfig{Retention: time.Minute, RetentionBytes: 4096, MaxMessageBytes: 300, MinInsyncReplicas: 2, UncleanLeaderElection: true}
	_, err = s.AlterTopicConfig(topic.ID, cfg)
	require.NoError(t, err)
	closeFirst()

	s, _ = openStore(t, path)
	again, err := s.Topic("orders")
	require.NoError(t, err)
	assert.Equal(t, cfg, again.Config())
	assert.Len(t, again.Partitions, 2)
}
