package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// fetchFrom is one partition to fetch.
type fetchFrom struct {
	topic     *storage.Topic
	partition int32
	offset    int64
}

// fetchRequest asks for the partitions, naming topics by name or id as v
// does, with 1 MiB per partition.
func fetchRequest(v int16, maxWait time.Duration, minBytes int32, from ...fetchFrom) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.MaxWaitMillis, req.MinBytes = int32(maxWait/time.Millisecond), minBytes
	for _, f := range from {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = f.topic.Name, f.topic.ID
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = f.partition, f.offset, 1<<20
		rt.Partitions = []kmsg.FetchRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// fetched returns the partitions of a fetch response, in order.
func fetched(t *testing.T, resp kmsg.Response) []kmsg.FetchResponseTopicPartition {
	t.Helper()
	var out []kmsg.FetchResponseTopicPartition
	for _, rt := range resp.(*kmsg.FetchResponse).Topics {
		out = append(out, rt.Partitions...)
	}
	return out
}

// values decodes a partition's records' values.
func values(t *testing.T, sp kmsg.FetchResponseTopicPartition) []string {
	t.Helper()
	recs, err := batchtest.Decode(sp.RecordBatches)
	require.NoError(t, err)
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

func appendValues(t *testing.T, p *storage.Partition, vals ...string) {
	t.Helper()
	_, err := p.Append(batchtest.Values(time.Now().UnixMilli(), vals...))
	require.NoError(t, err)
}

func TestFetchEveryVersion(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 1)
	appendValues(t, topic.Partitions[0], "a", "b")
	appendValues(t, topic.Partitions[0], "c")
	c := dialRaw(t, s)
	for _, v := range versions(4, 18) {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			resp := c.RoundTrip(fetchRequest(v, time.Second, 1, fetchFrom{topic, 0, 1}))
			if v >= 7 {
				assert.Equal(t, int32(0), resp.(*kmsg.FetchResponse).SessionID, "no session")
			}
			if v >= 13 {
				assert.Equal(t, [16]byte(topic.ID), resp.(*kmsg.FetchResponse).Topics[0].TopicID)
			}
			parts := fetched(t, resp)
			require.Len(t, parts, 1)
			sp := parts[0]
			require.Equal(t, int16(0), sp.ErrorCode, "%v", kerr.ErrorForCode(sp.ErrorCode))
			assert.Equal(t, []string{"a", "b", "c"}, values(t, sp), "from the batch holding offset 1")
			assert.Equal(t, int64(3), sp.HighWatermark)
			assert.Equal(t, int64(3), sp.LastStableOffset)
			if v >= 5 {
				assert.Equal(t, int64(0), sp.LogStartOffset)
			}
			assert.Nil(t, sp.AbortedTransactions, "read_uncommitted")
		})
	}
}

func TestFetchWaitsAndIsCompletedByAProduce(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 1)
	consumer := dialRaw(t, s)
	// A wait far longer than recv's read deadline: only the produce can
	// answer it in time.
	corr := consumer.Send(fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 0}))
	require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 1 }, 5*time.Second, time.Millisecond, "the fetch waits")

	producer := dialRaw(t, s)
	sp := produced(t, producer.RoundTrip(produceRequest(9, 1, "f", 0, batchtest.Values(nowMs(), "wake"))))
	require.Equal(t, int16(0), sp.ErrorCode)

	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	require.Equal(t, corr, consumer.Recv(resp))
	parts := fetched(t, resp)
	assert.Equal(t, []string{"wake"}, values(t, parts[0]))
	assert.Zero(t, s.replicas.Fetches().Delayed())
}

// With fetch.purgatory.purge.interval.requests 0, a fetch leaves the
// purgatory's lists as it is answered: its response is referenced by
// nothing but the connection that writes it.
func TestFetchPurgeIntervalZeroKeepsNothingAnswered(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.FetchPurgeInterval = 0 })
	topic := createTopic(t, s, "f", 2)
	consumer := dialRaw(t, s)
	corr := consumer.Send(fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 0}, fetchFrom{topic, 1, 0}))
	require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 1 }, 5*time.Second, time.Millisecond, "the fetch waits")
	require.Equal(t, 2, s.replicas.Fetches().Watched(), "under both partitions")

	producer := dialRaw(t, s)
	produced(t, producer.RoundTrip(produceRequest(9, 1, "f", 0, batchtest.Values(nowMs(), "wake"))))
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	require.Equal(t, corr, consumer.Recv(resp))
	// Its OnComplete wrote the answer; the lists drop it right after, on the
	// same goroutine, with no purge.
	require.Eventually(t, func() bool { return s.replicas.Fetches().Watched() == 0 }, 5*time.Second, time.Millisecond,
		"gone from both lists once answered")
	assert.Zero(t, s.replicas.Fetches().Garbage())
}

func TestFetchWaitsForMinBytesAcrossPartitions(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 2)
	size := int32(len(batchtest.Values(nowMs(), "x")))
	consumer := dialRaw(t, s)
	corr := consumer.Send(fetchRequest(12, time.Minute, 2*size, fetchFrom{topic, 0, 0}, fetchFrom{topic, 1, 0}))
	require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 1 }, 5*time.Second, time.Millisecond)

	producer := dialRaw(t, s)
	produced(t, producer.RoundTrip(produceRequest(9, 1, "f", 0, batchtest.Values(nowMs(), "x"))))
	// The produce checked the fetch before it answered: one batch is not
	// min_bytes, so the fetch still waits.
	assert.Equal(t, 1, s.replicas.Fetches().Delayed())
	produced(t, producer.RoundTrip(produceRequest(9, 1, "f", 1, batchtest.Values(nowMs(), "y"))))

	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	require.Equal(t, corr, consumer.Recv(resp))
	parts := fetched(t, resp)
	assert.Equal(t, []string{"x"}, values(t, parts[0]))
	assert.Equal(t, []string{"y"}, values(t, parts[1]))
}

func TestFetchExpires(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 1)
	c := dialRaw(t, s)
	start := time.Now()
	parts := fetched(t, c.RoundTrip(fetchRequest(12, 100*time.Millisecond, 1, fetchFrom{topic, 0, 0})))
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "answered at its max wait, not before")
	require.Len(t, parts, 1)
	assert.Equal(t, int16(0), parts[0].ErrorCode)
	assert.Empty(t, parts[0].RecordBatches)
	assert.Equal(t, int64(0), parts[0].HighWatermark)
	assert.Zero(t, s.replicas.Fetches().Delayed())
}

func TestFetchOfAClientThatDisconnects(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 3)
	c := dialRaw(t, s)
	c.Send(fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 0}, fetchFrom{topic, 1, 0}, fetchFrom{topic, 2, 0}))
	require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, 3, s.replicas.Fetches().Watched(), "watched under each of its partitions")

	require.NoError(t, c.NC.Close())
	require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 0 }, 5*time.Second, time.Millisecond,
		"the connection completes its waiting fetch when the client goes")
	require.Eventually(t, func() bool { return s.replicas.Fetches().Watched() == 0 }, 5*time.Second, 10*time.Millisecond,
		"and the reaper purges it from the watcher lists once nothing waits")
}

func TestFetchAnsweredWhenItsTopicIsDeleted(t *testing.T) {
	for _, v := range []int16{12, 13} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			s := newTestServer(t)
			topic := createTopic(t, s, "doomed", 1)
			consumer := dialRaw(t, s)
			corr := consumer.Send(fetchRequest(v, time.Minute, 1, fetchFrom{topic, 0, 0}))
			require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 1 }, 5*time.Second, time.Millisecond)

			del := kmsg.NewPtrDeleteTopicsRequest()
			del.SetVersion(6)
			del.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: topic.ID}}
			dialRaw(t, s).RoundTrip(del)

			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(v)
			require.Equal(t, corr, consumer.Recv(resp))
			want := kerr.UnknownTopicOrPartition.Code
			if v >= 13 {
				want = kerr.UnknownTopicID.Code
			}
			assert.Equal(t, want, fetched(t, resp)[0].ErrorCode)
		})
	}
}

func TestFetchErrorsAnswerAtOnce(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 1)
	appendValues(t, topic.Partitions[0], "a")
	c := dialRaw(t, s)
	unknown := &storage.Topic{Name: "nope", ID: storage.TopicID{1}}
	tests := []struct {
		name string
		req  *kmsg.FetchRequest
		want *kerr.Error
	}{
		{"offset past the end", fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 2}), kerr.OffsetOutOfRange},
		{"offset before the start", fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, -1}), kerr.OffsetOutOfRange},
		{"unknown topic", fetchRequest(12, time.Minute, 1, fetchFrom{unknown, 0, 0}), kerr.UnknownTopicOrPartition},
		{"unknown topic id", fetchRequest(13, time.Minute, 1, fetchFrom{unknown, 0, 0}), kerr.UnknownTopicID},
		{"unknown partition", fetchRequest(12, time.Minute, 1, fetchFrom{topic, 1, 0}), kerr.UnknownTopicOrPartition},
		{"leader epoch from the future", func() *kmsg.FetchRequest {
			req := fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 1})
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = 1
			return req
		}(), kerr.UnknownLeaderEpoch},
		{"replica fetch", func() *kmsg.FetchRequest {
			req := fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 1})
			req.ReplicaID = 2
			return req
		}(), kerr.NotLeaderForPartition},
		{"replica fetch, v15", func() *kmsg.FetchRequest {
			req := fetchRequest(15, time.Minute, 1, fetchFrom{topic, 0, 1})
			req.ReplicaState.ID = 2
			return req
		}(), kerr.NotLeaderForPartition},
		{"unknown isolation level", func() *kmsg.FetchRequest {
			req := fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 1})
			req.IsolationLevel = 7
			return req
		}(), kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := fetched(t, c.RoundTrip(tt.req))
			require.Len(t, parts, 1)
			assert.Equal(t, tt.want.Code, parts[0].ErrorCode, "got %v", kerr.ErrorForCode(parts[0].ErrorCode))
			assert.Equal(t, int64(-1), parts[0].HighWatermark)
			assert.Zero(t, s.replicas.Fetches().Delayed(), "never waited")
		})
	}
}

func TestFetchAPartitionWithAnErrorAnswersTheOthersToo(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 1)
	appendValues(t, topic.Partitions[0], "a")
	c := dialRaw(t, s)
	missing := &storage.Topic{Name: "missing"}
	parts := fetched(t, c.RoundTrip(fetchRequest(12, time.Minute, 1, fetchFrom{missing, 0, 0}, fetchFrom{topic, 0, 0})))
	require.Len(t, parts, 2)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, parts[0].ErrorCode)
	assert.Equal(t, []string{"a"}, values(t, parts[1]), "in request order, with what was readable")
}

// An unknown partition is answered with its error but, as in Kafka, does not
// end the wait for the partitions the fetch can read. kgo's TestIssue434
// deletes one of two topics a consumer reads: answering at once made the
// consumer fetch in a tight loop, some 7000 fetches a second, for the 15s
// its metadata took to drop the topic.
func TestFetchUnknownPartitionsDoNotEndTheWait(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 1)
	unknown := &storage.Topic{Name: "deleted", ID: storage.TopicID{1}}
	tests := []struct {
		name    string
		v       int16
		missing fetchFrom
		want    *kerr.Error
	}{
		{"unknown topic", 12, fetchFrom{unknown, 0, 0}, kerr.UnknownTopicOrPartition},
		{"unknown topic id", 13, fetchFrom{unknown, 0, 0}, kerr.UnknownTopicID},
		{"unknown partition", 12, fetchFrom{topic, 5, 0}, kerr.UnknownTopicOrPartition},
	}
	next := int64(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(t, s)
			corr := c.Send(fetchRequest(tt.v, time.Minute, 1, tt.missing, fetchFrom{topic, 0, next}))
			require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 1 }, 5*time.Second, time.Millisecond,
				"waits for data on the partition it can read")
			s.replicas.Fetches().Purge() // the entries of the fetches before, completed, stay until a purge
			assert.Equal(t, 1, s.replicas.Fetches().Watched(), "watched under that partition only")

			appendValues(t, topic.Partitions[0], "x")
			s.replicas.Wake(topic.Partitions[0])
			next++
			resp := kmsg.NewPtrFetchResponse()
			resp.SetVersion(tt.v)
			require.Equal(t, corr, c.Recv(resp))
			parts := fetched(t, resp)
			require.Len(t, parts, 2)
			assert.Equal(t, tt.want.Code, parts[0].ErrorCode, "got %v", kerr.ErrorForCode(parts[0].ErrorCode))
			assert.Equal(t, int64(-1), parts[0].HighWatermark)
			assert.Equal(t, int16(0), parts[1].ErrorCode)
			assert.Equal(t, []string{"x"}, values(t, parts[1]))
			require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 0 }, 5*time.Second, time.Millisecond)
		})
	}

	t.Run("answered at max_wait_ms", func(t *testing.T) {
		c := dialRaw(t, s)
		start := time.Now()
		parts := fetched(t, c.RoundTrip(fetchRequest(12, 100*time.Millisecond, 1, fetchFrom{unknown, 0, 0}, fetchFrom{topic, 0, next})))
		assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "not before the deadline")
		require.Len(t, parts, 2)
		assert.Equal(t, kerr.UnknownTopicOrPartition.Code, parts[0].ErrorCode)
		assert.Empty(t, parts[1].RecordBatches)
	})
}

func TestFetchSizeLimits(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 2)
	for _, p := range topic.Partitions {
		for _, v := range []string{"1", "2", "3"} {
			appendValues(t, p, v)
		}
	}
	size := int32(len(batchtest.Values(nowMs(), "x")))
	c := dialRaw(t, s)
	fetch := func(maxBytes, partitionMax int32) [][]string {
		req := fetchRequest(12, 0, 1, fetchFrom{topic, 0, 0}, fetchFrom{topic, 1, 0})
		req.MaxBytes = maxBytes
		for i := range req.Topics {
			req.Topics[i].Partitions[0].PartitionMaxBytes = partitionMax
		}
		var out [][]string
		for _, sp := range fetched(t, c.RoundTrip(req)) {
			out = append(out, values(t, sp))
		}
		return out
	}
	assert.Equal(t, [][]string{{"1", "2", "3"}, {"1", "2", "3"}}, fetch(1<<20, 1<<20))
	assert.Equal(t, [][]string{{"1"}, {"1"}}, fetch(1<<20, size+size/2), "partition_max_bytes: whole batches that fit")
	assert.Equal(t, [][]string{{"1", "2"}, {"1"}}, fetch(3*size, 2*size), "max_bytes is shared in request order")
	assert.Equal(t, [][]string{{"1"}, nil}, fetch(1<<20, 10), "the first batch comes whatever its size; later ones must fit")
	assert.Equal(t, [][]string{{"1"}, nil}, fetch(10, 1<<20), "even past max_bytes")
}

// TestFetchSessions: KIP-227. A fetch at epoch 0 opens a session and is
// answered on every partition; the incremental fetches after it name only
// what changed and are answered only on partitions with something new (an
// idle long poll: none at all); forgotten partitions leave; a wrong epoch,
// an unknown session and a closed one are refused as Kafka refuses them;
// epoch -1 is a full fetch without a session. Both ways of naming topics:
// by name (v12) and by id (v13+).
func TestFetchSessions(t *testing.T) {
	for _, v := range []int16{12, 17} {
		t.Run(fmt.Sprint("v", v), func(t *testing.T) {
			s := newTestServer(t)
			topic := createTopic(t, s, "f", 2)
			p0, p1 := topic.Partitions[0], topic.Partitions[1]
			appendValues(t, p0, "a")
			c := dialRaw(t, s)
			fetch := func(id, epoch int32, maxWait time.Duration, from []fetchFrom, forget ...int32) *kmsg.FetchResponse {
				req := fetchRequest(v, maxWait, 1, from...)
				req.SessionID, req.SessionEpoch = id, epoch
				if len(forget) > 0 {
					ft := kmsg.NewFetchRequestForgottenTopic()
					ft.Topic, ft.TopicID, ft.Partitions = topic.Name, topic.ID, forget
					req.ForgottenTopics = append(req.ForgottenTopics, ft)
				}
				return c.RoundTrip(req).(*kmsg.FetchResponse)
			}

			none := fetch(0, -1, 0, []fetchFrom{{topic, 0, 0}})
			assert.Zero(t, none.SessionID, "epoch -1: no session")
			assert.Zero(t, s.fetchSessions.len())

			open := fetch(0, 0, 0, []fetchFrom{{topic, 0, 0}, {topic, 1, 0}})
			require.Zero(t, open.ErrorCode)
			id := open.SessionID
			require.NotZero(t, id, "epoch 0 opens a session")
			require.Len(t, fetched(t, open), 2, "a full answer: every partition")
			assert.Equal(t, []string{"a"}, values(t, fetched(t, open)[0]))

			idle := fetch(id, 1, 20*time.Millisecond, []fetchFrom{{topic, 0, 1}})
			require.Zero(t, idle.ErrorCode)
			assert.Equal(t, id, idle.SessionID)
			assert.Empty(t, idle.Topics, "nothing new: an idle long poll is answered on no partition")

			appendValues(t, p1, "b")
			news := fetch(id, 2, time.Minute, nil)
			require.Len(t, fetched(t, news), 1, "only the partition with something new")
			assert.Equal(t, int32(1), fetched(t, news)[0].Partition)
			assert.Equal(t, []string{"b"}, values(t, fetched(t, news)[0]), "from the offset the session holds for it")

			assert.Equal(t, kerr.InvalidFetchSessionEpoch.Code, fetch(id, 2, 0, nil).ErrorCode, "an epoch used already")
			assert.Equal(t, kerr.FetchSessionIDNotFound.Code, fetch(id+1, 1, 0, nil).ErrorCode, "a session never made")

			appendValues(t, p1, "c")
			appendValues(t, p0, "d")
			forgot := fetch(id, 3, time.Minute, []fetchFrom{{topic, 1, 1}}, 1)
			require.Len(t, fetched(t, forgot), 1, "partition 1 forgotten, partition 0 has news")
			assert.Equal(t, int32(0), fetched(t, forgot)[0].Partition)
			assert.Equal(t, []string{"d"}, values(t, fetched(t, forgot)[0]))

			closed := fetch(id, -1, 0, []fetchFrom{{topic, 0, 2}})
			assert.Zero(t, closed.SessionID, "epoch -1 closes the session named")
			assert.Equal(t, kerr.FetchSessionIDNotFound.Code, fetch(id, 4, 0, nil).ErrorCode, "a closed session")
			assert.Zero(t, s.fetchSessions.len())
		})
	}
}

// TestFetchSessionSlots: when the cache is full, a new session takes the
// slot of the least recently used one only if it has been idle for
// min.incremental.fetch.session.eviction.ms; else the fetch is answered
// without one (session id 0).
func TestFetchSessionSlots(t *testing.T) {
	for _, tc := range []struct {
		name     string
		eviction time.Duration
		evicted  bool
	}{{"recently used", time.Hour, false}, {"idle long enough", 0, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, func(c *Config) { c.FetchSessionSlots, c.FetchSessionEviction = 1, tc.eviction })
			topic := createTopic(t, s, "f", 1)
			c := dialRaw(t, s)
			open := func() int32 {
				req := fetchRequest(12, 0, 0, fetchFrom{topic, 0, 0})
				req.SessionEpoch = 0
				return c.RoundTrip(req).(*kmsg.FetchResponse).SessionID
			}
			first := open()
			require.NotZero(t, first)
			second := open()
			if !tc.evicted {
				assert.Zero(t, second, "no room: a full fetch without a session")
				return
			}
			assert.NotZero(t, second, "the idle one evicted")
			req := fetchRequest(12, 0, 0)
			req.SessionID, req.SessionEpoch = first, 1
			assert.Equal(t, kerr.FetchSessionIDNotFound.Code, c.RoundTrip(req).(*kmsg.FetchResponse).ErrorCode)
		})
	}
}

func TestFetchReadCommitted(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 1)
	appendValues(t, topic.Partitions[0], "a")
	req := fetchRequest(12, 0, 1, fetchFrom{topic, 0, 0})
	req.IsolationLevel = 1
	parts := fetched(t, dialRaw(t, s).RoundTrip(req))
	assert.Equal(t, []string{"a"}, values(t, parts[0]))
	assert.Equal(t, int64(1), parts[0].LastStableOffset, "no transactions: the high watermark")
	assert.NotNil(t, parts[0].AbortedTransactions, "an empty list, not null")
	assert.Empty(t, parts[0].AbortedTransactions)
}

// TestWriterFailureFreesAWaitingReader is the regression test of the
// writer stopping (here: hanging up after a failed acks=0 produce) while
// the reader waits for room in a full response queue. The reader used to
// wait forever, holding the connection and Server.Close.
func TestWriterFailureFreesAWaitingReader(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.MaxInFlightPerConn = 2 })
	topic := createTopic(t, s, "f", 1)
	c := dialRaw(t, s)
	// In flight: the fetch, then the hang-up; the reader has read the
	// next request and waits for room. When the fetch expires the writer
	// writes it, the reader takes the freed place for the next, reads the
	// last and waits again, and the writer hangs up.
	// One write, so that the reader has every request buffered: it then
	// never reads the closed socket, which would free it anyway.
	c.SendTogether(
		fetchRequest(12, 100*time.Millisecond, 1, fetchFrom{topic, 0, 0}),
		produceRequest(9, 0, "missing", 0, batchtest.Values(nowMs(), "x")),
		kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsRequest())
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	c.Recv(resp)
	assert.True(t, c.ClosedByPeer())
	require.Eventually(t, func() bool { return s.net.Conns() == 0 }, 5*time.Second, time.Millisecond,
		"the connection's goroutines ended")
}

func TestPurgatorySizes(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "f", 2)
	assert.Equal(t, map[string]PurgatorySize{"Fetch": {}, "Produce": {}, "DeleteRecords": {}, "Rebalance": {}, "Heartbeat": {}, "OffsetExpiration": {},
		"ShareFetch": {}}, s.PurgatorySizes(), "every purgatory of the broker, its group coordinator and its share groups, empty")
	c := dialRaw(t, s)
	c.Send(fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 0}, fetchFrom{topic, 1, 0}))
	require.Eventually(t, func() bool { return s.PurgatorySizes()["Fetch"].Pending == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, PurgatorySize{Pending: 1, Watched: 2}, s.PurgatorySizes()["Fetch"])
}

// TestWaitingRequestHoldsNoBudget: a long poll, once handled, holds none
// of queued.max.request.bytes while it waits: what waits long (a fetch, a
// join through a rebalance) cannot keep the budget, or its overdraft, from
// the readers.
func TestWaitingRequestHoldsNoBudget(t *testing.T) {
	s := newTestServer(t)
	topic := createTopic(t, s, "quiet", 1)
	c := dialRaw(t, s)
	corr := c.Send(fetchRequest(12, time.Minute, 1, fetchFrom{topic, 0, 0}))
	require.Eventually(t, func() bool { return s.replicas.Fetches().Delayed() == 1 }, 5*time.Second, time.Millisecond, "the fetch waits")
	assert.Equal(t, int64(0), s.net.QueuedBytes(), "holding none of the budget")
	appendValues(t, topic.Partitions[0], "wake")
	s.replicas.Wake(topic.Partitions[0])
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(12)
	assert.Equal(t, corr, c.Recv(resp))
}
