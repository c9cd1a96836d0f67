package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// nowMs is a record timestamp for now: older ones fall to the default
// retention (7 days) as soon as they are appended.
func nowMs() int64 { return time.Now().UnixMilli() }

// sendTogether writes the requests' frames in one write, as send would
// one by one.
func (c *rawConn) sendTogether(reqs ...kmsg.Request) {
	c.t.Helper()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	var frames []byte
	for _, req := range reqs {
		c.corr++
		// AppendRequest writes the length at dst[0:4]: give it an empty dst.
		frames = append(frames, f.AppendRequest(nil, req, c.corr)...)
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.nc.Write(frames)
	require.NoError(c.t, err)
}
