package server

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/timer"
)

// newMutationQuotaServer returns a broker whose every client id is held
// to 2 partition mutations a second (a bucket of 4, two windows of a
// second), measured on a manual clock that stands still: what each
// request may do is decided by the counts alone. Its throttles are
// observed in reg.
func newMutationQuotaServer(t *testing.T) (s *Server, m *quota.Manager, reg *prometheus.Registry) {
	t.Helper()
	s = newTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _, err := s.ctrl().AlterQuotas(ctx, []metadata.QuotaAlteration{{Parts: []metadata.QuotaPart{{Type: metadata.QuotaClientID}},
		Ops: []metadata.QuotaOp{{Key: metadata.QuotaControllerMutationRate, Value: 2}}}}, false)
	require.NoError(t, err)
	reg = prometheus.NewRegistry()
	m, err = quota.New(quota.Mutation, quota.WithWindows(2, time.Second), quota.WithClock(timer.NewManualClock(0)),
		quota.WithRegisterer(reg, "broker"))
	require.NoError(t, err)
	s.quotas.mutation = m
	return s, m, reg
}

// serveAs serves req at version v as client id clientID's on a test
// connection, and returns the answer.
func serveAs(t *testing.T, s *Server, clientID string, v int16, req kmsg.Request) kmsg.Response {
	t.Helper()
	req.SetVersion(v)
	tc := newTestConn(t, s)
	r := tc.request(req)
	r.ClientID = clientID
	handler{s}.ServeKafka(r)
	return tc.await(r)
}

// credit is what clientID may still mutate.
func credit(t *testing.T, s *Server, m *quota.Manager, clientID string) float64 {
	t.Helper()
	q, ok := m.Quota(s.image(), "ANONYMOUS", clientID)
	require.True(t, ok)
	return m.Credit(q)
}

// TestMutationQuotaCreateTopics: from v6, a topic is created whole while
// its client owes nothing, the next ones are THROTTLING_QUOTA_EXCEEDED
// with Kafka's message and not created, a topic refused for its own
// fault is answered that fault, uncharged, and throttle_time_ms is the
// time the debt takes to pay. Before v6 everything is created and the
// debt throttles.
func TestMutationQuotaCreateTopics(t *testing.T) {
	s, m, reg := newMutationQuotaServer(t)
	resp := serveAs(t, s, "app", 7, createTopicsRequest(7, newTopic("a", 3, 1), newTopic("b", 3, 1), newTopic("c", 1, 1),
		newTopic("bad", 0, 1), newTopic("d", 2, 1))).(*kmsg.CreateTopicsResponse)
	require.Len(t, resp.Topics, 5)
	want := []int16{0, 0, kerr.ThrottlingQuotaExceeded.Code, kerr.InvalidPartitions.Code, kerr.ThrottlingQuotaExceeded.Code}
	for i, st := range resp.Topics {
		assert.Equal(t, want[i], st.ErrorCode, "topic %s", st.Topic)
	}
	require.NotNil(t, resp.Topics[2].ErrorMessage)
	assert.Equal(t, "The throttling quota has been exceeded.", *resp.Topics[2].ErrorMessage)
	assert.Equal(t, int32(1000), resp.ThrottleMillis, "2 owed at 2/s")
	for name, exists := range map[string]bool{"a": true, "b": true, "c": false, "d": false} {
		_, err := s.image().Topic(name)
		assert.Equal(t, exists, err == nil, "topic %s", name)
	}
	assert.InDelta(t, -2, credit(t, s, m, "app"), 1e-9, "refusals charge nothing")

	resp = serveAs(t, s, "old", 5, createTopicsRequest(5, newTopic("e", 3, 1), newTopic("f", 3, 1), newTopic("g", 1, 1))).(*kmsg.CreateTopicsResponse)
	for _, st := range resp.Topics {
		assert.Zero(t, st.ErrorCode, "v5 is permissive: topic %s created", st.Topic)
	}
	assert.Equal(t, int32(1500), resp.ThrottleMillis, "3 owed at 2/s")

	resp = serveAs(t, s, "careful", 7, createTopicsRequest(7, newTopic("h", 4, 1))).(*kmsg.CreateTopicsResponse)
	assert.Zero(t, resp.Topics[0].ErrorCode)
	assert.Zero(t, resp.ThrottleMillis, "a client's own bucket, spent to the last token: no throttle")
	mfs, err := reg.Gather()
	require.NoError(t, err)
	require.Len(t, mfs, 1)
	assert.Equal(t, uint64(2), mfs[0].GetMetric()[0].GetHistogram().GetSampleCount(), "two requests throttled")
}

// TestMutationQuotaDeleteTopics: from v5 a deletion is charged the
// topic's partitions, refused THROTTLING_QUOTA_EXCEEDED once its client
// owes; an unknown topic is answered as such and costs nothing.
func TestMutationQuotaDeleteTopics(t *testing.T) {
	s, m, _ := newMutationQuotaServer(t)
	for name, n := range map[string]int32{"x": 3, "y": 3, "z": 1} {
		createTopic(t, s, name, n)
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TopicNames = []string{"x", "nope", "y", "z"}
	resp := serveAs(t, s, "app", 5, req).(*kmsg.DeleteTopicsResponse)
	require.Len(t, resp.Topics, 4)
	want := []int16{0, kerr.UnknownTopicOrPartition.Code, 0, kerr.ThrottlingQuotaExceeded.Code}
	for i, st := range resp.Topics {
		assert.Equal(t, want[i], st.ErrorCode, "topic %s", *st.Topic)
	}
	assert.Equal(t, int32(1000), resp.ThrottleMillis)
	_, err := s.image().Topic("z")
	assert.NoError(t, err, "z is not deleted")
	assert.InDelta(t, -2, credit(t, s, m, "app"), 1e-9)

	req.TopicNames = []string{"z"}
	resp = serveAs(t, s, "app", 4, req).(*kmsg.DeleteTopicsResponse)
	assert.Zero(t, resp.Topics[0].ErrorCode, "v4 is permissive")
	assert.Equal(t, int32(1500), resp.ThrottleMillis)
}

// TestMutationQuotaCreatePartitions: from v3 the partitions a topic
// gains are charged, and refused once its client owes; a topic the
// controller refuses (a bad assignment) is given back its charge; before
// v3 every growth is made and the debt throttles.
func TestMutationQuotaCreatePartitions(t *testing.T) {
	s, m, _ := newMutationQuotaServer(t)
	for _, name := range []string{"p1", "p2", "p3", "p4", "p5"} {
		createTopic(t, s, name, 1)
	}
	grow := func(counts ...any) *kmsg.CreatePartitionsRequest {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 5000
		for i := 0; i < len(counts); i += 2 {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = counts[i].(string), int32(counts[i+1].(int))
			req.Topics = append(req.Topics, rt)
		}
		return req
	}

	bad := grow("p4", 5)
	bad.Topics[0].Assignment = []kmsg.CreatePartitionsRequestTopicAssignment{{Replicas: []int32{1}}} // 1 of the 4 added
	resp := serveAs(t, s, "refunded", 3, bad).(*kmsg.CreatePartitionsResponse)
	assert.Equal(t, kerr.InvalidReplicaAssignment.Code, resp.Topics[0].ErrorCode)
	assert.InDelta(t, 4, credit(t, s, m, "refunded"), 1e-9, "charged 4, given back")

	resp = serveAs(t, s, "app", 3, grow("p1", 4, "gone", 2, "p2", 4, "p3", 2)).(*kmsg.CreatePartitionsResponse)
	got := map[string]int16{}
	for _, st := range resp.Topics {
		got[st.Topic] = st.ErrorCode
	}
	assert.Equal(t, map[string]int16{"p1": 0, "gone": kerr.UnknownTopicOrPartition.Code, "p2": 0, "p3": kerr.ThrottlingQuotaExceeded.Code}, got)
	assert.Equal(t, int32(1000), resp.ThrottleMillis)
	p3, err := s.image().Topic("p3")
	require.NoError(t, err)
	assert.Len(t, p3.Partitions, 1, "p3 does not grow")

	resp = serveAs(t, s, "old", 2, grow("p3", 4, "p5", 4)).(*kmsg.CreatePartitionsResponse)
	for _, st := range resp.Topics {
		assert.Zero(t, st.ErrorCode, "v2 is permissive: %s grows", st.Topic)
	}
	assert.Equal(t, int32(1000), resp.ThrottleMillis, "6 added, 2 owed")
}

// TestMutationQuotaForwarded: a request a peer forwards (a broker's
// client id) was charged on the broker the client sent it to, and is not
// charged again here.
func TestMutationQuotaForwarded(t *testing.T) {
	s, _, _ := newMutationQuotaServer(t)
	for _, name := range []string{"f1", "f2"} {
		resp := serveAs(t, s, "broker-2", 7, createTopicsRequest(7, newTopic(name, 10, 1))).(*kmsg.CreateTopicsResponse)
		assert.Zero(t, resp.Topics[0].ErrorCode, "%s created", name)
		assert.Zero(t, resp.ThrottleMillis)
	}
}

// TestMutationQuotaMutes: on a real connection, a throttled answer mutes
// it, as the other quotas do: the connection's next request is read only
// once the throttle time has passed. The bound is a lower one, measured
// from before the throttled request was sent, so that a loaded machine
// can only make it later; the muted gauge, up for half a second only,
// could be missed by a poller held back that long.
func TestMutationQuotaMutes(t *testing.T) {
	s, _, _ := newMutationQuotaServer(t)
	c := dialRaw(t, s) // client id "test"
	start := time.Now()
	resp := c.RoundTrip(createTopicsRequest(7, newTopic("m1", 5, 1), newTopic("m2", 1, 1))).(*kmsg.CreateTopicsResponse)
	assert.Equal(t, kerr.ThrottlingQuotaExceeded.Code, resp.Topics[1].ErrorCode)
	assert.Equal(t, int32(500), resp.ThrottleMillis)
	next := kmsg.NewPtrApiVersionsRequest()
	next.SetVersion(3)
	c.RoundTrip(next)
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "the connection was muted for the throttle time")
}
