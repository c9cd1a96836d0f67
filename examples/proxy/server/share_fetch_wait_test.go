package server

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareHarness drives the proxy's ShareFetch against fake upstream
// leaders whose legs wait until the test answers them: what a leader
// with nothing to acquire does for max_wait_ms. Everything runs on the
// test's goroutine, in the order the test says.
type shareHarness struct {
	t      *testing.T
	s      *Server
	ups    map[int32]*fakeShareUpstream
	leader func(shareTP) int32
	held   map[int32][]heldShareLeg // sent, not answered yet, oldest first
}

type heldShareLeg struct {
	req  *kmsg.ShareFetchRequest
	done func(kmsg.Response, error)
}

func newShareHarness(t *testing.T, leader func(shareTP) int32, nodes ...int32) *shareHarness {
	t.Helper()
	h := &shareHarness{t: t, s: &Server{shares: newShareSessions()}, ups: map[int32]*fakeShareUpstream{}, leader: leader,
		held: map[int32][]heldShareLeg{}}
	for _, n := range nodes {
		h.ups[n] = newFakeShareUpstream(n)
	}
	return h
}

// send holds a leg. Only a closing leg (-1) may go to a session whose
// leg is out: epochs are sequential.
func (h *shareHarness) send(node int32, req kmsg.Request, done func(kmsg.Response, error)) {
	sub := req.(*kmsg.ShareFetchRequest)
	if sub.ShareSessionEpoch != -1 {
		assert.Empty(h.t, h.held[node], "a leg to %d while another is out", node)
	}
	h.held[node] = append(h.held[node], heldShareLeg{sub, done})
}

// answer has node's fake serve its oldest leg and returns that leg's
// request.
func (h *shareHarness) answer(node int32) *kmsg.ShareFetchRequest {
	h.t.Helper()
	require.NotEmpty(h.t, h.held[node], "a leg to %d is out", node)
	l := h.held[node][0]
	h.held[node] = h.held[node][1:]
	l.done(h.ups[node].serve(h.t, l.req), nil)
	return l.req
}

// fail fails node's oldest leg in transport.
func (h *shareHarness) fail(node int32) {
	h.t.Helper()
	require.NotEmpty(h.t, h.held[node])
	l := h.held[node][0]
	h.held[node] = h.held[node][1:]
	l.done(nil, errors.New("connection reset"))
}

// drain answers every leg out, and those they lead to, by node.
func (h *shareHarness) drain() {
	for {
		var nodes []int32
		for n, ls := range h.held {
			if len(ls) > 0 {
				nodes = append(nodes, n)
			}
		}
		if len(nodes) == 0 {
			return
		}
		slices.Sort(nodes)
		h.answer(nodes[0])
	}
}

// shareResult is what the client got for one ShareFetch.
type shareResult struct {
	resp   *kmsg.ShareFetchResponse
	failed *shard
	n      int // answers: at most one
}

func (r *shareResult) answered(t *testing.T) *kmsg.ShareFetchResponse {
	t.Helper()
	require.Equal(t, 1, r.n, "answered once")
	require.Nil(t, r.failed)
	return r.resp
}

// fetch sends the client's req; its answer lands in the result.
func (h *shareHarness) fetch(req *kmsg.ShareFetchRequest) *shareResult {
	res := &shareResult{}
	h.s.startShareFetch(req, h.leader, h.send, func(resp *kmsg.ShareFetchResponse, failed *shard) {
		res.resp, res.failed = resp, failed
		res.n++
	})
	return res
}

// records lists the records an answer gives the client.
func records(resp *kmsg.ShareFetchResponse) []shareRecord {
	var rs []shareRecord
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			for _, r := range p.AcquiredRecords {
				for o := r.FirstOffset; o <= r.LastOffset; o++ {
					rs = append(rs, shareRecord{shareTP{t.TopicID, p.Partition}, o})
				}
			}
		}
	}
	return rs
}

// partitionOf returns tp's entry in resp, or nil.
func partitionOf(resp *kmsg.ShareFetchResponse, tp shareTP) *kmsg.ShareFetchResponseTopicPartition {
	for _, t := range resp.Topics {
		for i, p := range t.Partitions {
			if t.TopicID == tp.topic && p.Partition == tp.partition {
				return &t.Partitions[i]
			}
		}
	}
	return nil
}

// twoLeaders is a topic of two partitions, p0 led by 1 and p1 by 2.
func twoLeaders() (p0, p1 shareTP, leader func(shareTP) int32) {
	var topic [16]byte
	topic[0] = 9
	p0, p1 = shareTP{topic, 0}, shareTP{topic, 1}
	return p0, p1, func(tp shareTP) int32 { return 1 + tp.partition }
}

// TestShareFetchAnswersWithoutTheIdleLeader: the client's ShareFetch over
// two leaders is answered as soon as the leader with records answers,
// not when the idle one's long poll ends; what the idle one acquires
// afterwards is answered at once to the next ShareFetch; no record is
// lost or given twice.
func TestShareFetchAnswersWithoutTheIdleLeader(t *testing.T) {
	p0, p1, leader := twoLeaders()
	h := newShareHarness(t, leader, 1, 2)
	h.ups[2].quiet = true
	var got []shareRecord

	res := h.fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
	require.Zero(t, res.n, "waits for a leg")
	h.answer(1)
	resp := res.answered(t)
	got = append(got, records(resp)...)
	assert.Equal(t, []shareRecord{{p0, 0}}, records(resp), "answered with 1's record, 2's leg still out")
	require.Len(t, h.held[2], 1, "2's leg stays in flight")

	h.ups[2].quiet = false // records arrive at 2 before its max wait ends
	h.answer(2)

	res = h.fetch(shareFetchReq(1, nil, nil, nil))
	resp = res.answered(t)
	assert.Equal(t, []shareRecord{{p1, 0}}, records(resp), "2's late records, answered at once")
	got = append(got, records(resp)...)
	for _, n := range []int32{1, 2} {
		require.Len(t, h.held[n], 1, "a leg to %d", n)
		assert.Zero(t, h.held[n][0].req.MaxWaitMillis, "the proxy holds records already: %d answers at once", n)
	}

	// Whatever comes back from here on reaches the client exactly once.
	h.drain()
	for epoch := int32(2); epoch < 5; epoch++ {
		res = h.fetch(shareFetchReq(epoch, nil, nil, nil))
		h.drain()
		got = append(got, records(res.answered(t))...)
	}
	res = h.fetch(shareFetchReq(5, nil, nil, nil))
	got = append(got, records(res.answered(t))...) // the pending answers of the last legs
	h.ups[1].quiet, h.ups[2].quiet = true, true
	h.drain()
	require.Equal(t, 1, res.n)

	acquired := append(slices.Clone(h.ups[1].given), h.ups[2].given...)
	assert.ElementsMatch(t, acquired, got, "every record acquired upstream reaches the client once")
}

// TestShareFetchAcksWaitForTheLegInFlight: a ShareFetch acknowledging
// records of a leader whose leg is still out sends nothing there until
// that leg answers, then carries the acknowledgements in the next leg,
// at the next epoch; the client's answer waits for it, so that the
// acknowledgements' error codes are in the answer to the request that
// carried them, even when the other leader brought records before.
func TestShareFetchAcksWaitForTheLegInFlight(t *testing.T) {
	p0, p1, leader := twoLeaders()
	h := newShareHarness(t, leader, 1, 2)
	h.ups[2].quiet = true

	h.fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
	h.answer(1)
	h.ups[2].quiet = false
	h.answer(2) // p1's record, pending
	res := h.fetch(shareFetchReq(1, nil, nil, nil))
	require.Equal(t, []shareRecord{{p1, 0}}, records(res.answered(t)))
	// Both legs of epoch 1 are out; the client acknowledges p1's record.
	h.ups[1].quiet, h.ups[2].quiet = true, true
	res = h.fetch(shareFetchReq(2, nil, []shareTP{p1}, nil))
	require.Len(t, h.held[2], 1, "no second leg to 2 while one is out")
	assert.Empty(t, h.held[2][0].req.Topics, "the leg out carries no acknowledgements")

	h.answer(2)
	require.Len(t, h.held[2], 1, "the acknowledgements' leg follows 2's answer")
	acks := h.held[2][0].req
	require.Len(t, acks.Topics, 1)
	assert.NotEmpty(t, acks.Topics[0].Partitions[0].AcknowledgementBatches, "it carries them")
	assert.Equal(t, int32(2), acks.ShareSessionEpoch, "at 2's next epoch: 0 opened it, 1 was the leg out")

	h.ups[1].quiet = false
	h.answer(1) // records on 1: not enough while the acknowledgements are out
	assert.Zero(t, res.n, "waits for the acknowledgements' answer")
	h.answer(2)
	resp := res.answered(t)
	assert.Equal(t, 1, h.ups[2].acked[p1], "the acknowledgements reach the leader that acquired the records")
	ack := partitionOf(resp, p1)
	require.NotNil(t, ack, "answered in the request that carried them")
	assert.Zero(t, ack.AcknowledgeErrorCode)
	assert.Equal(t, []shareRecord{{p0, 1}}, records(resp), "and 1's records with them")
}

// TestShareFetchForgottenWhileInFlight: records a leg in flight acquires
// for a partition the client forgot meanwhile are not answered (kgo drops
// what it did not ask for) but released upstream, in the next leg, which
// forgets the partition there.
func TestShareFetchForgottenWhileInFlight(t *testing.T) {
	p0, p1, leader := twoLeaders()
	h := newShareHarness(t, leader, 1, 2)
	h.ups[2].quiet = true
	h.fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
	h.answer(1)

	h.ups[1].quiet = true
	res := h.fetch(shareFetchReq(1, nil, nil, []shareTP{p1}))
	h.ups[2].quiet = false
	h.answer(2) // p1's record, acquired as the client forgets p1
	assert.Zero(t, res.n, "no record for the client yet")
	h.answer(1)
	resp := res.answered(t)
	assert.Nil(t, partitionOf(resp, p1), "p1 is not the client's any more")

	res = h.fetch(shareFetchReq(2, nil, nil, nil))
	h.drain()
	resp = res.answered(t)
	assert.Nil(t, partitionOf(resp, p1))
	assert.Equal(t, 1, h.ups[2].released[p1], "p1's record released")
	assert.False(t, h.ups[2].parts[p1], "and p1 forgotten at 2")
}

// TestShareFetchLeaderMovedWhileInFlight: records the old leader's leg
// acquires for a partition that moved meanwhile are not given to the
// client, whose acknowledgements would go to the new leader, but
// released at the old one, which forgets the partition.
func TestShareFetchLeaderMovedWhileInFlight(t *testing.T) {
	p0, p1, twoLeader := twoLeaders()
	leaders := map[shareTP]int32{p0: twoLeader(p0), p1: twoLeader(p1)}
	h := newShareHarness(t, func(tp shareTP) int32 { return leaders[tp] }, 1, 2)
	h.ups[2].quiet = true
	h.fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
	h.answer(1)

	leaders[p1] = 1
	h.ups[1].quiet = true
	res := h.fetch(shareFetchReq(1, nil, nil, nil))
	require.Len(t, h.held[1], 1)
	require.Len(t, h.held[1][0].req.Topics, 1, "p1 named at its new leader")
	h.ups[2].quiet = false
	h.answer(2) // the old leader's leg, with a record of p1
	h.answer(1)
	assert.Empty(t, records(res.answered(t)), "not through the session the client acknowledges it to")

	res = h.fetch(shareFetchReq(2, nil, nil, nil))
	h.drain()
	res.answered(t)
	assert.Equal(t, 1, h.ups[2].released[p1], "released at the old leader")
	assert.False(t, h.ups[2].parts[p1], "and forgotten there")
	assert.True(t, h.ups[1].parts[p1])
}

// TestShareFetchCloseWithLegInFlight: closing the session (-1) with a leg
// out sends every upstream session its -1 at once (Kafka takes -1 out of
// sequence, and releases the member's records as it closes), carries the
// acknowledgements, and answers none of the late leg's records.
func TestShareFetchCloseWithLegInFlight(t *testing.T) {
	p0, p1, leader := twoLeaders()
	h := newShareHarness(t, leader, 1, 2)
	h.ups[2].quiet = true
	h.fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
	h.answer(1)

	res := h.fetch(shareFetchReq(-1, nil, []shareTP{p0}, nil))
	require.Len(t, h.held[2], 2, "2's -1 goes behind its leg out")
	assert.Equal(t, int32(-1), h.held[2][1].req.ShareSessionEpoch)
	h.ups[2].quiet = false
	h.answer(2) // the old leg, with a record
	h.answer(1)
	assert.Zero(t, res.n, "2's close is out")
	h.answer(2)
	resp := res.answered(t)
	assert.Empty(t, records(resp), "nothing given to a closing client")
	assert.Equal(t, 1, h.ups[1].acked[p0])
	assert.True(t, h.ups[1].closed && h.ups[2].closed)
	assert.Equal(t, kerr.ShareSessionNotFound.Code, h.fetch(shareFetchReq(1, nil, nil, nil)).answered(t).ErrorCode)
}

// TestShareFetchLegFailsAfterTheAnswer: a leg that fails in transport
// after its request was answered drops the member's state, as a failed
// forward does: the next ShareFetch gets SHARE_SESSION_NOT_FOUND, and the
// client opens a new session.
func TestShareFetchLegFailsAfterTheAnswer(t *testing.T) {
	p0, p1, leader := twoLeaders()
	h := newShareHarness(t, leader, 1, 2)
	h.ups[2].quiet = true
	res := h.fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
	h.answer(1)
	res.answered(t)
	h.fail(2)
	assert.Equal(t, 1, res.n, "nothing more for the answered request")
	assert.Equal(t, kerr.ShareSessionNotFound.Code, h.fetch(shareFetchReq(1, nil, nil, nil)).answered(t).ErrorCode)

	// An upstream session error with no request waiting drops the
	// member's state at once.
	res = h.fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
	h.answer(1)
	res.answered(t)
	l := h.held[2][0]
	h.held[2] = h.held[2][1:]
	lost := l.req.ResponseKind().(*kmsg.ShareFetchResponse)
	lost.ErrorCode = kerr.ShareSessionNotFound.Code
	l.done(lost, nil)
	assert.Equal(t, kerr.ShareSessionNotFound.Code, h.fetch(shareFetchReq(1, nil, nil, nil)).answered(t).ErrorCode)
	assert.Empty(t, h.held[1], "no leg sent for a session out of step")

	// A request waiting for the leg that fails is failed with it.
	res = h.fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
	h.ups[1].quiet = true
	h.answer(1)
	h.fail(2)
	require.Equal(t, 1, res.n)
	require.NotNil(t, res.failed)
	assert.Equal(t, int32(2), res.failed.node)
}
