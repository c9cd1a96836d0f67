package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeShareUpstream is an upstream broker's side of one member's share
// session, kept as Kafka keeps it (ShareSession.update: the named
// partitions join, then the forgotten ones leave): each ShareFetch is
// answered with one newly acquired record of every partition left in the
// session (none while quiet: a leader with nothing to acquire), and the
// acknowledgement batches it carries are counted. -1 closes the session.
type fakeShareUpstream struct {
	node     int32
	epoch    int32 // the next request's
	parts    map[shareTP]bool
	acked    map[shareTP]int // acknowledgement batches received
	released map[shareTP]int // of those, RELEASE ones
	acquired map[shareTP]int // records acquired for the member
	given    []shareRecord   // every record acquired, in order
	next     int64           // the offset the next record acquired gets
	quiet    bool
	closed   bool
}

// shareRecord is one acquired record: its partition and offset.
type shareRecord struct {
	tp     shareTP
	offset int64
}

func newFakeShareUpstream(node int32) *fakeShareUpstream {
	return &fakeShareUpstream{node: node, parts: map[shareTP]bool{}, acked: map[shareTP]int{}, released: map[shareTP]int{},
		acquired: map[shareTP]int{}}
}

func (u *fakeShareUpstream) serve(t *testing.T, req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
	t.Helper()
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	switch req.ShareSessionEpoch {
	case 0:
		u.parts, u.closed = map[shareTP]bool{}, false
	case -1:
		u.closed = true
	default:
		require.False(t, u.closed, "broker %d: the session is closed", u.node)
		require.Equal(t, u.epoch, req.ShareSessionEpoch, "broker %d: the session's epoch", u.node)
	}
	u.epoch = nextShareEpoch(req.ShareSessionEpoch)
	answered := map[shareTP]*kmsg.ShareFetchResponseTopicPartition{}
	for _, rt := range req.Topics {
		for _, p := range rt.Partitions {
			tp := shareTP{rt.TopicID, p.Partition}
			u.parts[tp] = true
			if len(p.AcknowledgementBatches) > 0 {
				u.acked[tp] += len(p.AcknowledgementBatches)
				for _, b := range p.AcknowledgementBatches {
					if len(b.AcknowledgeTypes) == 1 && b.AcknowledgeTypes[0] == shareAckRelease {
						u.released[tp]++
					}
				}
				rp := kmsg.NewShareFetchResponseTopicPartition()
				rp.Partition = tp.partition
				answered[tp] = &rp
			}
		}
	}
	for _, ft := range req.ForgottenTopicsData {
		for _, p := range ft.Partitions {
			delete(u.parts, shareTP{ft.TopicID, p})
		}
	}
	held := make([]shareTP, 0, len(u.parts))
	for tp := range u.parts {
		held = append(held, tp)
	}
	sortShareTPs(held)
	for _, tp := range held {
		if u.quiet || u.closed {
			break
		}
		rp := answered[tp]
		if rp == nil {
			p := kmsg.NewShareFetchResponseTopicPartition()
			p.Partition = tp.partition
			rp = &p
			answered[tp] = rp
		}
		r := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		r.FirstOffset, r.LastOffset, r.DeliveryCount = u.next, u.next, 1
		u.given = append(u.given, shareRecord{tp, u.next})
		u.next++
		u.acquired[tp]++
		rp.AcquiredRecords = append(rp.AcquiredRecords, r)
	}
	tps := make([]shareTP, 0, len(answered))
	for tp := range answered {
		tps = append(tps, tp)
	}
	sortShareTPs(tps)
	for _, tp := range tps {
		rp := answered[tp]
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = u.node, 0
		resp.Topics = appendShareFetchResult(resp.Topics, tp.topic, *rp)
	}
	return resp
}

// shareFetchReq is a client's ShareFetch at epoch: fetch names partitions
// to fetch, ackOnly partitions named for their acknowledgements alone
// (partition_max_bytes 0, one batch), forget the forgotten ones.
func shareFetchReq(epoch int32, fetch, ackOnly, forget []shareTP) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	group, member := "g", "m"
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &group, &member, epoch
	for _, tp := range fetch {
		p := kmsg.NewShareFetchRequestTopicPartition()
		p.Partition, p.PartitionMaxBytes = tp.partition, 1<<20
		req.Topics = appendShareFetchPartition(req.Topics, tp.topic, p)
	}
	for _, tp := range ackOnly {
		p := kmsg.NewShareFetchRequestTopicPartition()
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 0, []int8{1}
		p.Partition, p.AcknowledgementBatches = tp.partition, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{b}
		req.Topics = appendShareFetchPartition(req.Topics, tp.topic, p)
	}
	for _, tp := range forget {
		req.ForgottenTopicsData = appendShareForgotten(req.ForgottenTopicsData, tp)
	}
	return req
}

// TestShareFetchAnswersOnlyTheClientsSession drives the proxy's ShareFetch
// (planned, sent to fake upstream leaders, merged) as kgo's share
// consumer drives it when a partition is revoked from it: it names the
// partition once more, for its acknowledgements alone, and forgets it in
// the same request. kgo keeps its session as Kafka does (named partitions
// join, forgotten ones leave) and drops, with "broker returned partition
// from share fetch that we did not ask for", any partition of an answer
// outside it. The proxy must answer only the client's session, carry the
// acknowledgements to the broker that acquired the records, and forget the
// partition there, so that no record of it is acquired for the member
// afterwards.
func TestShareFetchAnswersOnlyTheClientsSession(t *testing.T) {
	var topic [16]byte
	topic[0] = 7
	p0, p1, p2 := shareTP{topic, 0}, shareTP{topic, 1}, shareTP{topic, 2}
	leaders := map[shareTP]int32{p0: 1, p1: 2, p2: 2}
	leader := func(tp shareTP) int32 { return leaders[tp] }

	for _, tc := range []struct {
		name string
		// second is the request after the opening one (which fetches
		// p0 and p1): it acknowledges p1's or p2's records and forgets it.
		second *kmsg.ShareFetchRequest
		gone   shareTP
		// acksTo is the upstream that gets the acknowledgements, 0 for
		// none: the proxy answers NOT_LEADER_OR_FOLLOWER for them.
		acksTo int32
	}{
		{
			name:   "revoked partition of the session",
			second: shareFetchReq(1, nil, []shareTP{p1}, []shareTP{p1}),
			gone:   p1, acksTo: 2,
		},
		{
			name:   "partition never in the session",
			second: shareFetchReq(1, nil, []shareTP{p2}, []shareTP{p2}),
			gone:   p2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newShareHarness(t, leader, 1, 2)
			client := map[shareTP]bool{} // kgo's sessionParts
			fetch := func(req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
				t.Helper()
				res := h.fetch(req)
				h.drain()
				resp := res.answered(t)
				require.Zero(t, resp.ErrorCode)
				asked := map[shareTP]bool{} // kgo's cursorMap: the session and this request's partitions
				for _, rt := range req.Topics {
					for _, p := range rt.Partitions {
						tp := shareTP{rt.TopicID, p.Partition}
						client[tp], asked[tp] = true, true
					}
				}
				for _, ft := range req.ForgottenTopicsData {
					for _, p := range ft.Partitions {
						delete(client, shareTP{ft.TopicID, p})
					}
				}
				for tp := range client {
					asked[tp] = true
				}
				for _, rt := range resp.Topics {
					for _, p := range rt.Partitions {
						tp := shareTP{rt.TopicID, p.Partition}
						assert.True(t, asked[tp], "epoch %d answered partition %d, which the client did not ask for",
							req.ShareSessionEpoch, tp.partition)
					}
				}
				return resp
			}
			ups := h.ups

			fetch(shareFetchReq(0, []shareTP{p0, p1}, nil, nil))
			before := ups[2].acquired[tc.gone]
			resp := fetch(tc.second)
			for _, epoch := range []int32{2, 3} {
				fetch(shareFetchReq(epoch, nil, nil, nil))
			}

			assert.Equal(t, before, ups[2].acquired[tc.gone], "no record of %d acquired once forgotten", tc.gone.partition)
			assert.False(t, ups[2].parts[tc.gone], "forgotten upstream")
			var ack *kmsg.ShareFetchResponseTopicPartition
			for _, rt := range resp.Topics {
				for i, p := range rt.Partitions {
					if p.Partition == tc.gone.partition {
						ack = &rt.Partitions[i]
					}
				}
			}
			require.NotNil(t, ack, "the acknowledgements are answered")
			if tc.acksTo != 0 {
				assert.Equal(t, 1, ups[tc.acksTo].acked[tc.gone]-ups[tc.acksTo].released[tc.gone],
					"the acknowledgements reach the broker that acquired the records")
				assert.Zero(t, ack.AcknowledgeErrorCode)
			} else {
				assert.Equal(t, kerr.NotLeaderForPartition.Code, ack.AcknowledgeErrorCode, "acquired through no upstream session")
				assert.Zero(t, ups[1].acked[tc.gone]+ups[2].acked[tc.gone])
			}
			assert.Empty(t, ack.AcquiredRecords, "nothing acquired for a partition being forgotten")
		})
	}
}
