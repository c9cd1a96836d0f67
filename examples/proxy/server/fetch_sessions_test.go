package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessTP is a partition as a test names it: by topic name before v13,
// by id from v13.
type sessTP struct {
	topic     string
	id        [16]byte
	partition int32
}

// manualClock is a clock the test moves.
type manualClock struct{ t time.Time }

func (c *manualClock) now() time.Time      { return c.t }
func (c *manualClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newManualClock() *manualClock         { return &manualClock{t: time.Unix(1_000_000, 0)} }
func newTestFetchSessions(slots int) (*fetchSessions, *manualClock) {
	c := newManualClock()
	fs := newFetchSessions(slots, 2*time.Minute)
	fs.now = c.now
	return fs, c
}

// sessFetch is a consumer's fetch of version v in session id at epoch,
// naming parts at offset (each at its own offset: offsets[i], or 0) and
// forgetting forget.
func sessFetch(v int16, id, epoch int32, parts []sessTP, offsets []int64, forget []sessTP) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(v)
	req.ReplicaID, req.ReplicaState.ID = -1, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 50<<20
	req.SessionID, req.SessionEpoch = id, epoch
	for i, tp := range parts {
		n := len(req.Topics)
		if n == 0 || req.Topics[n-1].Topic != tp.topic || req.Topics[n-1].TopicID != tp.id {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = tp.topic, tp.id
			req.Topics = append(req.Topics, rt)
			n++
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = tp.partition, 1<<20
		if i < len(offsets) {
			rp.FetchOffset = offsets[i]
		}
		req.Topics[n-1].Partitions = append(req.Topics[n-1].Partitions, rp)
	}
	for _, tp := range forget {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.TopicID, ft.Partitions = tp.topic, tp.id, []int32{tp.partition}
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	return req
}

// partAnswer is what a test's upstream answers a partition.
type partAnswer struct {
	hw, lso, logStart int64
	records           bool
	code              int16
}

// answerFetch is the proxy's answer to full (the fetch a session stands
// for), before its session filters it: every partition, in full's order,
// as answers says (an unnamed one: high watermark 10, nothing new).
func answerFetch(full *kmsg.FetchRequest, answers map[sessTP]partAnswer) *kmsg.FetchResponse {
	resp := full.ResponseKind().(*kmsg.FetchResponse)
	for _, rt := range full.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			a, ok := answers[sessTP{rt.Topic, rt.TopicID, rp.Partition}]
			if !ok {
				a = partAnswer{hw: 10, lso: 10}
			}
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, a.code
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = a.hw, a.lso, a.logStart
			if a.records {
				sp.RecordBatches = []byte{1, 2, 3}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// partsOf lists a fetch's partitions in order.
func partsOf(req *kmsg.FetchRequest) []sessTP {
	var out []sessTP
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, sessTP{rt.Topic, rt.TopicID, rp.Partition})
		}
	}
	return out
}

// answered lists an answer's partitions in order.
func answered(resp *kmsg.FetchResponse) []sessTP {
	var out []sessTP
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, sessTP{rt.Topic, rt.TopicID, rp.Partition})
		}
	}
	return out
}

// offsetOf is the fetch offset full asks of tp.
func offsetOf(t *testing.T, full *kmsg.FetchRequest, tp sessTP) int64 {
	t.Helper()
	for _, rt := range full.Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == tp.topic && rt.TopicID == tp.id && rp.Partition == tp.partition {
				return rp.FetchOffset
			}
		}
	}
	require.Failf(t, "not fetched", "%v", tp)
	return 0
}

// open opens a session of parts (all at offset 0) at version v, answered
// high watermark 10 everywhere, and returns its id.
func open(t *testing.T, fs *fetchSessions, v int16, parts ...sessTP) int32 {
	t.Helper()
	full, finish, code := fs.begin(sessFetch(v, 0, 0, parts, nil, nil), false)
	require.Zero(t, code)
	require.NotNil(t, finish, "a full fetch at epoch 0 may open a session")
	resp := answerFetch(full, nil)
	finish(resp)
	return resp.SessionID
}

var (
	tA0 = sessTP{topic: "a", partition: 0}
	tA1 = sessTP{topic: "a", partition: 1}
	tB0 = sessTP{topic: "b", partition: 0}
)

// TestFetchSessionIncremental: a full fetch at epoch 0 opens a session
// and is answered on every partition; an incremental fetch naming
// nothing fetches every partition of the session (what the proxy reads,
// and waits on in its purgatory) and is answered only on those with
// records, or whose high watermark, last stable offset or log start
// moved; one naming a partition updates its offset, one forgetting a
// partition drops it. A partition answered with records goes to the end
// of the session, so that the next fetches share max_bytes fairly (Kafka's
// IncrementalFetchContext).
func TestFetchSessionIncremental(t *testing.T) {
	fs, _ := newTestFetchSessions(10)
	full, finish, code := fs.begin(sessFetch(12, 0, 0, []sessTP{tA0, tA1, tB0}, []int64{5, 6, 7}, nil), false)
	require.Zero(t, code)
	require.NotNil(t, finish)
	resp := answerFetch(full, map[sessTP]partAnswer{tA0: {hw: 10, lso: 10, records: true}})
	finish(resp)
	id := resp.SessionID
	require.NotZero(t, id, "a session is opened")
	assert.Equal(t, []sessTP{tA0, tA1, tB0}, answered(resp), "the opening fetch is answered in full")
	assert.Equal(t, 1, fs.len())

	// Epoch 1 names a/0's new offset only: the fetch read is the whole
	// session's, in the order it was opened with.
	full, finish, code = fs.begin(sessFetch(12, id, 1, []sessTP{tA0}, []int64{8}, nil), false)
	require.Zero(t, code)
	require.NotNil(t, finish)
	assert.Equal(t, []sessTP{tA0, tA1, tB0}, partsOf(full), "every partition of the session is fetched")
	assert.Equal(t, int64(8), offsetOf(t, full, tA0))
	assert.Equal(t, int64(6), offsetOf(t, full, tA1), "the session's offset of an unnamed partition")
	assert.Equal(t, int32(0), full.SessionID)
	assert.Equal(t, int32(-1), full.SessionEpoch, "the fetch read is a full one")
	resp = answerFetch(full, map[sessTP]partAnswer{
		tA1: {hw: 10, lso: 10},               // nothing new
		tB0: {hw: 12, lso: 10},               // the high watermark moved
		tA0: {hw: 10, lso: 10, logStart: 3}}) // the log start moved
	finish(resp)
	assert.Equal(t, id, resp.SessionID)
	assert.Equal(t, []sessTP{tA0, tB0}, answered(resp), "only what changed is answered")

	// Epoch 2: a/0 has records; the last stable offset of b/0 moves.
	full, finish, _ = fs.begin(sessFetch(12, id, 2, nil, nil, nil), false)
	resp = answerFetch(full, map[sessTP]partAnswer{tB0: {hw: 12, lso: 12}, tA0: {hw: 10, lso: 10, logStart: 3, records: true}})
	finish(resp)
	assert.Equal(t, []sessTP{tA0, tB0}, answered(resp))

	// Epoch 3: a/0, answered with records, is read last; an idle long
	// poll is answered with no partition at all.
	full, finish, _ = fs.begin(sessFetch(12, id, 3, nil, nil, nil), false)
	assert.Equal(t, []sessTP{tA1, tB0, tA0}, partsOf(full), "a/0 had records: it goes last")
	resp = answerFetch(full, map[sessTP]partAnswer{tB0: {hw: 12, lso: 12}, tA0: {hw: 10, lso: 10, logStart: 3}})
	finish(resp)
	assert.Empty(t, resp.Topics)
	assert.Equal(t, id, resp.SessionID)

	// Epoch 4 forgets b/0 and adds a new partition.
	b1 := sessTP{topic: "b", partition: 1}
	full, finish, code = fs.begin(sessFetch(12, id, 4, []sessTP{b1}, []int64{0}, []sessTP{tB0}), false)
	require.Zero(t, code)
	assert.Equal(t, []sessTP{tA1, tA0, b1}, partsOf(full))
	resp = answerFetch(full, map[sessTP]partAnswer{tA0: {hw: 10, lso: 10, logStart: 3}})
	finish(resp)
	assert.Equal(t, []sessTP{b1}, answered(resp), "a new partition is answered")
}

// TestFetchSessionErrorsAreAlwaysAnswered: a partition answered with an
// error is in every answer, and once the error clears it is answered
// again even at the high watermark it had (Kafka sets the cached one to
// -1).
func TestFetchSessionErrorsAreAlwaysAnswered(t *testing.T) {
	fs, _ := newTestFetchSessions(10)
	id := open(t, fs, 12, tA0, tA1)
	for epoch := int32(1); epoch <= 2; epoch++ {
		full, finish, _ := fs.begin(sessFetch(12, id, epoch, nil, nil, nil), false)
		resp := answerFetch(full, map[sessTP]partAnswer{tA1: {hw: 10, lso: 10, code: kerr.NotLeaderForPartition.Code}})
		finish(resp)
		assert.Equal(t, []sessTP{tA1}, answered(resp), "epoch %d", epoch)
	}
	full, finish, _ := fs.begin(sessFetch(12, id, 3, nil, nil, nil), false)
	resp := answerFetch(full, nil)
	finish(resp)
	assert.Equal(t, []sessTP{tA1}, answered(resp), "the partition is back")
}

// TestFetchSessionEpochsAndIDs: the errors of a fetch that names a
// session the proxy cannot serve, answered at once with no partition and
// session id 0.
func TestFetchSessionEpochsAndIDs(t *testing.T) {
	fs, _ := newTestFetchSessions(10)
	id := open(t, fs, 12, tA0)

	_, _, code := fs.begin(sessFetch(12, id+1, 1, nil, nil, nil), false)
	assert.Equal(t, kerr.FetchSessionIDNotFound.Code, code, "an unknown session")
	_, _, code = fs.begin(sessFetch(12, 0, 1, nil, nil, nil), false)
	assert.Equal(t, kerr.FetchSessionIDNotFound.Code, code, "an incremental fetch without a session")
	_, _, code = fs.begin(sessFetch(12, id, 2, nil, nil, nil), false)
	assert.Equal(t, kerr.InvalidFetchSessionEpoch.Code, code, "an epoch ahead")
	_, _, code = fs.begin(sessFetch(13, id, 1, nil, nil, nil), false)
	assert.Equal(t, kerr.FetchSessionTopicIDError.Code, code, "a session by name, fetched by id")

	// Epoch 1 is served; sent again (a duplicate), it is refused.
	full, finish, code := fs.begin(sessFetch(12, id, 1, nil, nil, nil), false)
	require.Zero(t, code)
	_, _, code = fs.begin(sessFetch(12, id, 1, nil, nil, nil), false)
	assert.Equal(t, kerr.InvalidFetchSessionEpoch.Code, code, "an epoch behind")

	// Epoch 2 is served while epoch 1 still waits: epoch 1's answer finds
	// the session moved on, and is refused (Kafka's "possible duplicate
	// request").
	_, finish2, code := fs.begin(sessFetch(12, id, 2, nil, nil, nil), false)
	require.Zero(t, code)
	resp := answerFetch(full, map[sessTP]partAnswer{tA0: {hw: 11, lso: 11, records: true}})
	finish(resp)
	assert.Equal(t, kerr.InvalidFetchSessionEpoch.Code, resp.ErrorCode)
	assert.Empty(t, resp.Topics)
	assert.Equal(t, id, resp.SessionID)
	resp = answerFetch(full, map[sessTP]partAnswer{tA0: {hw: 11, lso: 11, records: true}})
	finish2(resp)
	assert.Zero(t, resp.ErrorCode)
	assert.Equal(t, []sessTP{tA0}, answered(resp))

	// A session of v13 is not fetched at v12.
	x := sessTP{id: [16]byte{1}, partition: 0}
	byID := open(t, fs, 13, x)
	_, _, code = fs.begin(sessFetch(12, byID, 1, nil, nil, nil), false)
	assert.Equal(t, kerr.FetchSessionTopicIDError.Code, code)
	full, finish, code = fs.begin(sessFetch(13, byID, 1, nil, nil, nil), false)
	require.Zero(t, code)
	assert.Equal(t, []sessTP{x}, partsOf(full), "keyed by topic id")
	finish(answerFetch(full, nil))
}

// TestFetchSessionClosing: a full fetch naming a session closes it: at
// epoch -1 it is answered without one, at epoch 0 it opens another. An
// incremental fetch that forgets every partition closes its session and
// is answered as a sessionless fetch.
func TestFetchSessionClosing(t *testing.T) {
	fs, _ := newTestFetchSessions(10)
	id := open(t, fs, 12, tA0)
	full, finish, code := fs.begin(sessFetch(12, id, -1, []sessTP{tA0}, nil, nil), false)
	require.Zero(t, code)
	assert.Nil(t, finish, "no session")
	assert.Equal(t, []sessTP{tA0}, partsOf(full))
	_, _, code = fs.begin(sessFetch(12, id, 1, nil, nil, nil), false)
	assert.Equal(t, kerr.FetchSessionIDNotFound.Code, code, "closed by epoch -1")

	id = open(t, fs, 12, tA0)
	again := open(t, fs, 12, tA1)
	_, _, code = fs.begin(sessFetch(12, id, 1, nil, nil, nil), false)
	require.Zero(t, code, "another session is left alone")
	full, finish, _ = fs.begin(sessFetch(12, again, 0, []sessTP{tB0}, nil, nil), false)
	resp := answerFetch(full, nil)
	finish(resp)
	require.NotZero(t, resp.SessionID)
	assert.NotEqual(t, again, resp.SessionID)
	_, _, code = fs.begin(sessFetch(12, again, 1, nil, nil, nil), false)
	assert.Equal(t, kerr.FetchSessionIDNotFound.Code, code, "replaced by epoch 0")
	assert.Equal(t, 2, fs.len())

	full, finish, code = fs.begin(sessFetch(12, id, 2, nil, nil, []sessTP{tA0}), false)
	require.Zero(t, code)
	assert.Nil(t, finish, "emptied: answered without a session")
	assert.Empty(t, partsOf(full))
	assert.Equal(t, 1, fs.len())

	// A follower's full fetch opens none (the proxy answers its
	// partitions NOT_LEADER_OR_FOLLOWER), nor does a fetch before v7.
	_, finish, _ = fs.begin(sessFetch(12, 0, 0, []sessTP{tA0}, nil, nil), true)
	assert.Nil(t, finish)
	_, finish, _ = fs.begin(sessFetch(6, 0, 0, []sessTP{tA0}, nil, nil), false)
	assert.Nil(t, finish)
}

// TestFetchSessionCacheEviction: Kafka's FetchSessionCache rules with
// max.incremental.fetch.session.cache.slots 2 and eviction after two
// minutes. A full cache makes room for a new session by evicting the
// least recently used one when it is stale (unused for longer than the
// eviction time), else the smallest session created longer ago than the
// eviction time, when the new one has more partitions; otherwise the
// fetch is answered with session id 0 and the client goes on with full
// fetches. Sessions are not tied to connections: only the cache drops
// them.
func TestFetchSessionCacheEviction(t *testing.T) {
	fs, clock := newTestFetchSessions(2)
	a := open(t, fs, 12, tA0, tA1)
	b := open(t, fs, 12, tB0)
	clock.add(time.Second)
	assert.Zero(t, open(t, fs, 12, tA0, tA1, tB0), "full, and no session stale or old enough")

	clock.add(2 * time.Minute) // both are idle longer than the eviction time
	full, finish, code := fs.begin(sessFetch(12, a, 1, nil, nil, nil), false)
	require.Zero(t, code)
	finish(answerFetch(full, nil)) // a is used: b is the stale one
	c := open(t, fs, 12, tA0, tA1, tB0)
	require.NotZero(t, c, "the stale session's slot")
	_, _, code = fs.begin(sessFetch(12, b, 1, nil, nil, nil), false)
	assert.Equal(t, kerr.FetchSessionIDNotFound.Code, code, "b was evicted")

	clock.add(time.Second)
	assert.Zero(t, open(t, fs, 12, tB0), "a (old, 2 partitions) is not evicted for 1 partition, c is too young")
	assert.Zero(t, open(t, fs, 12, tA0, tB0), "nor for as many")
	d := open(t, fs, 12, tA0, tA1, tB0)
	require.NotZero(t, d, "a is evicted for a larger session")
	_, _, code = fs.begin(sessFetch(12, a, 2, nil, nil, nil), false)
	assert.Equal(t, kerr.FetchSessionIDNotFound.Code, code)
	_, _, code = fs.begin(sessFetch(12, c, 1, nil, nil, nil), false)
	assert.Zero(t, code, "c stays")
	assert.Equal(t, 2, fs.len())
	assert.Equal(t, int64(2), fs.evictions.Load(), "b and a")
	assert.Equal(t, 6, fs.partitions(), "c and d, three each")

	none, _ := newTestFetchSessions(0)
	assert.Zero(t, open(t, none, 12, tA0), "no slots: no session")
}

// TestIncrementalFetchAuthorizedOnItsSession: the partitions of a session
// an incremental fetch does not name are checked as the named ones: a
// partition the client may not read is answered
// TOPIC_AUTHORIZATION_FAILED in every answer, as Kafka checks the whole
// session each time, and it stays in the session, so that it is read once
// the client may read it.
func TestIncrementalFetchAuthorizedOnItsSession(t *testing.T) {
	fs, _ := newTestFetchSessions(10)
	var id int32
	for epoch := int32(0); epoch <= 2; epoch++ {
		var names []sessTP
		if epoch == 0 {
			names = []sessTP{tA0, tB0} // the opening fetch: b is denied, and in the session
		}
		full, finish, code := fs.begin(sessFetch(12, id, epoch, names, nil, nil), false)
		require.Zero(t, code)
		fwd, amend := authorizeFetch(nil, readsA(t), full)
		require.NotNil(t, fwd)
		require.NotNil(t, amend)
		assert.Equal(t, []sessTP{tA0}, partsOf(fwd.(*kmsg.FetchRequest)), "b is not read")
		resp := answerFetch(fwd.(*kmsg.FetchRequest), nil)
		amend(resp)
		finish(resp)
		if epoch == 0 {
			id = resp.SessionID
			require.NotZero(t, id)
			assert.Equal(t, []sessTP{tA0, tB0}, answered(resp))
			continue
		}
		assert.Equal(t, id, resp.SessionID)
		assert.Equal(t, []sessTP{tB0}, answered(resp), "epoch %d: the denial is answered, a/0 has nothing new", epoch)
	}
}

// TestIncrementalFetchWaitsOnItsSession drives the proxy on the wire, in
// front of a fake leader: a client opens a session on two partitions at
// their end, then long-polls with an incremental fetch that names only
// the first. The fetch waits in the proxy's purgatory on both partitions
// of the session, and the record that reaches the second one upstream
// answers it, long before its max_wait_ms, with that partition alone.
// The same epoch sent again is refused.
func TestIncrementalFetchWaitsOnItsSession(t *testing.T) {
	l := newFakeLeader(t, 2)
	s := newTestProxy(t, l)
	c := dialTestProxy(t, s)
	p0, p1 := sessTP{topic: "t", partition: 0}, sessTP{topic: "t", partition: 1}

	// Tail both partitions first, until their caches know upstream's
	// log start and last stable offset (a tail that has not polled yet
	// answers -1 for them, and the session would answer the partitions
	// again once they are known).
	warm := sessFetch(12, 0, -1, []sessTP{p0, p1}, []int64{0, 0}, nil)
	warm.MaxWaitMillis = 0
	known := func(resp *kmsg.FetchResponse) bool {
		for _, p := range resp.Topics[0].Partitions {
			if p.LogStartOffset != 0 || p.LastStableOffset != 0 {
				return false
			}
		}
		return true
	}
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		resp := c.roundTrip(warm, 10*time.Second).(*kmsg.FetchResponse)
		require.Zero(t, resp.SessionID, "epoch -1 opens no session")
		if known(resp) {
			break
		}
		require.Less(t, time.Since(start), 10*time.Second, "the tails poll upstream")
	}

	first := sessFetch(12, 0, 0, []sessTP{p0, p1}, []int64{0, 0}, nil)
	first.MaxWaitMillis = 0
	resp := c.roundTrip(first, 10*time.Second).(*kmsg.FetchResponse)
	require.Zero(t, resp.ErrorCode)
	id := resp.SessionID
	require.NotZero(t, id, "a session is opened")
	require.Equal(t, []sessTP{p0, p1}, answered(resp))
	require.Equal(t, 2, s.Stats().Tailed, "both partitions are tailed from their end")
	assert.Equal(t, 1, s.Stats().FetchSessions)

	inc := sessFetch(12, id, 1, []sessTP{p0}, []int64{0}, nil)
	inc.MaxWaitMillis = 120_000 // far longer than the test waits for its answer
	c.send(inc)
	require.Eventually(t, func() bool { return s.Stats().WaitingFetches == 1 }, 10*time.Second, time.Millisecond,
		"the incremental fetch waits")
	l.append(1)
	resp = c.recv(inc, 30*time.Second).(*kmsg.FetchResponse)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, id, resp.SessionID)
	require.Equal(t, []sessTP{p1}, answered(resp), "woken by the partition it did not name")
	assert.Equal(t, batchAt(0), resp.Topics[0].Partitions[0].RecordBatches)
	assert.Equal(t, int64(1), resp.Topics[0].Partitions[0].HighWatermark)

	resp = c.roundTrip(inc, 10*time.Second).(*kmsg.FetchResponse)
	assert.Equal(t, kerr.InvalidFetchSessionEpoch.Code, resp.ErrorCode, "epoch 1 again")
	assert.Zero(t, resp.SessionID)
	assert.Empty(t, resp.Topics)

	// Epoch 2 moves p1 on: nothing new anywhere, and the answer at
	// max_wait_ms is empty.
	idle := sessFetch(12, id, 2, []sessTP{p1}, []int64{1}, nil)
	idle.MaxWaitMillis = 0
	resp = c.roundTrip(idle, 10*time.Second).(*kmsg.FetchResponse)
	require.Zero(t, resp.ErrorCode)
	assert.Equal(t, id, resp.SessionID)
	assert.Empty(t, resp.Topics, "nothing changed")
}
