package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// createTopic creates a topic straight in the broker's store, for tests of
// other APIs than CreateTopics.
func createTopic(t *testing.T, s *Server, name string, partitions int32) *storage.Topic {
	t.Helper()
	topic, err := s.data.store.CreateTopic(name, partitions, s.data.store.TopicDefaults())
	require.NoError(t, err)
	return topic
}

// versions returns min to max, inclusive.
func versions(min, max int16) []int16 {
	var vs []int16
	for v := min; v <= max; v++ {
		vs = append(vs, v)
	}
	return vs
}
