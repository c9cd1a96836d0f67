package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// createTopic creates a topic through the broker's controller, as
// CreateTopics does, for tests of other APIs than CreateTopics, and
// returns it from the broker's store.
func createTopic(t testing.TB, s *Server, name string, partitions int32) *storage.Topic {
	t.Helper()
	require.NoError(t, createTopicErr(s, name, partitions))
	topic, err := s.data.store.Topic(name)
	require.NoError(t, err)
	return topic
}

// createTopicErr creates a topic through the broker's controller.
func createTopicErr(s *Server, name string, partitions int32) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.ctrl().CreateTopic(ctx, controller.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: 1})
	return err
}

// deleteTopic deletes a topic through the broker's controller.
func deleteTopic(t testing.TB, s *Server, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.ctrl().DeleteTopic(ctx, name, metadata.TopicID{})
	require.NoError(t, err)
}

// versions returns min to max, inclusive.
func versions(min, max int16) []int16 {
	var vs []int16
	for v := min; v <= max; v++ {
		vs = append(vs, v)
	}
	return vs
}

// nowMs is a record timestamp for now: older ones fall to the default
// retention (7 days) as soon as they are appended.
func nowMs() int64 { return time.Now().UnixMilli() }
