package server

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readUpstream reads the parts idx of f from their upstream leaders, one
// fetch per leader at the client's version, on the client's connections,
// with maxWait and minBytes, and calls then once every answer is in (on
// the goroutine of the last). A fetch that fails in transport answers its
// parts NOT_LEADER_OR_FOLLOWER and refreshes the metadata.
func (f *delayedFetch) readUpstream(idx []int, maxWait, minBytes int32, then func()) {
	s := f.s
	type piece struct {
		node  int32
		req   *kmsg.FetchRequest
		parts []int
	}
	byID := f.req.Version >= 13
	byNode := map[int32]*piece{}
	var pieces []*piece
	for _, i := range idx {
		p := &f.parts[i]
		node := s.leaderOf(p.tp.Topic, p.tp.Partition)
		pc := byNode[node]
		if pc == nil {
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(f.req.Version)
			req.ReplicaID, req.ReplicaState.ID = -1, -1
			req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, f.req.MaxBytes
			req.IsolationLevel = f.req.IsolationLevel
			req.SessionID, req.SessionEpoch = 0, -1
			// No rack: upstream must not send the client to a follower
			// (KIP-392), which the proxy does not show it.
			req.ClusterID = f.req.ClusterID
			pc = &piece{node: node, req: req}
			byNode[node] = pc
			pieces = append(pieces, pc)
		}
		rt := f.req.Topics[p.ti]
		if n := len(pc.req.Topics); n == 0 || pc.req.Topics[n-1].Topic != rt.Topic || pc.req.Topics[n-1].TopicID != rt.TopicID {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = rt.Topic, rt.TopicID
			pc.req.Topics = append(pc.req.Topics, t)
		}
		last := &pc.req.Topics[len(pc.req.Topics)-1]
		last.Partitions = append(last.Partitions, p.rq)
		pc.parts = append(pc.parts, i)
	}

	if len(pieces) == 0 {
		then()
		return
	}
	var mu sync.Mutex
	left := len(pieces)
	for _, pc := range pieces {
		f.r.send(pc.node, pc.req, func(resp kmsg.Response, err error) {
			type key struct {
				name string
				id   [16]byte
				p    int32
			}
			got := map[key]*kmsg.FetchResponseTopicPartition{}
			if err == nil {
				m := resp.(*kmsg.FetchResponse)
				for ti := range m.Topics {
					t := &m.Topics[ti]
					for pi := range t.Partitions {
						k := key{name: t.Topic, p: t.Partitions[pi].Partition}
						if byID {
							k = key{id: t.TopicID, p: t.Partitions[pi].Partition}
						}
						got[k] = &t.Partitions[pi]
						if m.ErrorCode != 0 {
							t.Partitions[pi].ErrorCode = m.ErrorCode // a session error upstream, say
						}
					}
				}
			}
			refresh := err != nil
			for _, i := range pc.parts {
				p := &f.parts[i]
				rt := f.req.Topics[p.ti]
				k := key{name: rt.Topic, p: p.rq.Partition}
				if byID {
					k = key{id: rt.TopicID, p: p.rq.Partition}
				}
				a := got[k]
				if a == nil {
					e := errorPart(p.rq.Partition, kerr.NotLeaderForPartition.Code)
					a = &e
				}
				refresh = refresh || movedLeadership(a.ErrorCode)
				p.up, p.fromCache, p.node = a, false, pc.node
			}
			if refresh {
				s.cl.Refresh()
			}
			mu.Lock()
			left--
			last := left == 0
			mu.Unlock()
			if last {
				then()
			}
		})
	}
}
