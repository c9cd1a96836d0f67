package server

import (
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
)

// send sends req to upstream broker node on r's connection's session, and
// calls done with the answer. With the client gone, done gets
// errConnClosed.
func (r *request) send(node int32, req kmsg.Request, done func(kmsg.Response, error)) {
	sess := r.upstream()
	if sess == nil {
		done(nil, errConnClosed)
		return
	}
	sess.Send(node, req, done)
}

// forward sends req, as the client sent it, to node and answers the
// client with upstream's answer, after fix (which may be nil) has
// rewritten what names upstream brokers. A transport failure hangs up.
func (r *request) forward(node int32, req kmsg.Request, fix func(kmsg.Response)) {
	r.send(node, req, func(resp kmsg.Response, err error) {
		if err != nil {
			r.failed(node, err)
			return
		}
		if fix != nil {
			fix(resp)
		}
		r.Respond(resp)
	})
}

// failed answers a request whose forward failed in transport: the client's
// connection is closed after what is owed before it (the client retries,
// as when its broker goes away), and the metadata is refreshed, since the
// broker may have moved.
func (r *request) failed(node int32, err error) {
	if errors.Is(err, errConnClosed) || errors.Is(err, upstream.ErrClosed) {
		// The client's connection is closing, and its session with it:
		// no one is left to answer.
		r.HangUp()
		return
	}
	r.s.cl.Refresh()
	r.hangUp(fmt.Errorf("%w: %s to broker %d: %w", ErrUpstream, kmsg.NameForKey(r.Msg.Key()), node, err))
}

// The coordinator types of FindCoordinator.
const (
	coordinatorGroup       int8 = 0
	coordinatorTransaction int8 = 1
)

// coordinators finds the coordinator of each key, from the cache or with
// one FindCoordinator upstream (batched from v4), and calls then with a
// broker for every key: one that could not be found maps to any broker,
// which answers NOT_COORDINATOR, and the client finds its coordinator
// again. then runs on the calling goroutine, before coordinators returns.
//
// A lookup blocks the caller, a connection's reader, for one round trip:
// the only wait a handler makes, and a rare one (a client finds its
// coordinator through the proxy, which caches it, before it sends it
// anything). Blocking is what keeps the connection's order: the requests
// the client sent after this one reach upstream after it.
func (s *Server) coordinators(typ int8, keys []string, then func(map[string]int32)) {
	found := make(map[string]int32, len(keys))
	var missing []string
	for _, k := range keys {
		if n, ok := s.cl.Coordinator(typ, k); ok {
			found[k] = n
		} else if _, dup := found[k]; !dup {
			found[k] = -1
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		then(found)
		return
	}
	batched := false
	if vs := s.cl.KnownVersions(); vs != nil && vs.Max(kmsg.FindCoordinator) >= 4 {
		batched = true
	}
	lookups := [][]string{missing}
	if !batched {
		lookups = lookups[:0]
		for _, k := range missing {
			lookups = append(lookups, []string{k})
		}
	}
	var mu sync.Mutex // guards found from the callbacks
	var wg sync.WaitGroup
	for _, ks := range lookups {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = typ
		if batched {
			req.SetVersion(4)
			req.CoordinatorKeys = ks
		} else {
			req.SetVersion(min(3, max(0, s.cl.KnownVersions().Max(kmsg.FindCoordinator))))
			req.CoordinatorKey = ks[0]
		}
		wg.Add(1)
		s.cl.Send(s.cl.Any(), req, func(resp kmsg.Response, err error) {
			defer wg.Done()
			byKey := map[string]kmsg.FindCoordinatorResponseCoordinator{}
			if err == nil {
				for _, c := range coordinatorsOf(req, resp.(*kmsg.FindCoordinatorResponse)) {
					byKey[c.Key] = c
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range ks {
				if c, ok := byKey[k]; ok && c.ErrorCode == 0 {
					s.cl.SetCoordinator(typ, k, c.NodeID)
					found[k] = c.NodeID
				} else {
					found[k] = s.cl.Any()
				}
			}
		})
	}
	wg.Wait()
	then(found)
}

// coordinatorsOf lists a FindCoordinator answer's coordinators, whatever
// its version.
func coordinatorsOf(req *kmsg.FindCoordinatorRequest, resp *kmsg.FindCoordinatorResponse) []kmsg.FindCoordinatorResponseCoordinator {
	if resp.Version >= 4 {
		return resp.Coordinators
	}
	return []kmsg.FindCoordinatorResponseCoordinator{{Key: req.CoordinatorKey, NodeID: resp.NodeID, Host: resp.Host,
		Port: resp.Port, ErrorCode: resp.ErrorCode, ErrorMessage: resp.ErrorMessage}}
}

// coordinator is coordinators for one key.
func (s *Server) coordinator(typ int8, key string, then func(int32)) {
	s.coordinators(typ, []string{key}, func(m map[string]int32) { then(m[key]) })
}

// leaderOf returns the upstream leader of a partition, or any broker when
// the metadata knows none: that broker then answers with the error the
// client needs (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION), which
// also refreshes the proxy's metadata.
func (s *Server) leaderOf(topic string, partition int32) int32 {
	if n, _, ok := s.cl.Leader(topic, partition); ok {
		return n
	}
	s.cl.Refresh()
	return s.cl.Any()
}

// controller returns the upstream controller, or any broker.
func (s *Server) controller() int32 {
	if n := s.cl.Controller(); n >= 0 {
		if _, ok := s.cl.Addr(n); ok {
			return n
		}
	}
	return s.cl.Any()
}

// staleCoordinator reports whether a group error code means the proxy's
// cached coordinator is wrong: the client will find it again, and so will
// the proxy.
func staleCoordinator(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code:
		return true
	}
	return false
}

// shard is one piece of a request split across upstream brokers.
type shard struct {
	node int32
	req  kmsg.Request
	resp kmsg.Response
	err  error
}

// fanout sends each shard on r's session and calls merge once every
// answer (or error) is in, on the goroutine of the last.
func (r *request) fanout(shards []*shard, merge func([]*shard)) {
	if len(shards) == 0 {
		merge(nil)
		return
	}
	var mu sync.Mutex
	left := len(shards)
	for _, sh := range shards {
		r.send(sh.node, sh.req, func(resp kmsg.Response, err error) {
			mu.Lock()
			sh.resp, sh.err = resp, err
			left--
			last := left == 0
			mu.Unlock()
			if last {
				merge(shards)
			}
		})
	}
}

// firstFailure returns the first shard that failed in transport, or nil.
func firstFailure(shards []*shard) *shard {
	for _, sh := range shards {
		if sh.err != nil {
			return sh
		}
	}
	return nil
}

// shardsByNode returns the shard for node, creating it with newReq.
func shardsByNode(byNode map[int32]*shard, order *[]*shard, node int32, newReq func() kmsg.Request) *shard {
	sh := byNode[node]
	if sh == nil {
		sh = &shard{node: node, req: newReq()}
		byNode[node] = sh
		*order = append(*order, sh)
	}
	return sh
}
