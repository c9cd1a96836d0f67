package server

// DescribeConfigs: v0-v4, as upstream serves it.
//
// A topic resource goes to any upstream broker; a broker resource (or a
// broker logger) names a broker id, and goes to that upstream broker when
// the metadata lists it, else to any broker, which answers as Kafka does
// for a broker resource that is not its own. A request whose resources
// all go to one broker is forwarded as it is; one that spans several is
// split and merged back in request order. A piece that fails in transport
// closes the client's connection (route.go).

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { serve(kmsg.DescribeConfigs, 0, 4, (*Server).handleDescribeConfigs) }

func (s *Server) handleDescribeConfigs(r *request) {
	req := r.Msg.(*kmsg.DescribeConfigsRequest)
	anyNode := s.cl.Any()
	byNode := map[int32]*shard{}
	var shards []*shard
	for _, res := range req.Resources {
		node := anyNode
		if res.ResourceType == kmsg.ConfigResourceTypeBroker || res.ResourceType == kmsg.ConfigResourceTypeBrokerLogger {
			if id, err := strconv.ParseInt(res.ResourceName, 10, 32); err == nil {
				if _, ok := s.cl.Addr(int32(id)); ok && id >= 0 {
					node = int32(id)
				}
			}
		}
		sh := shardsByNode(byNode, &shards, node, func() kmsg.Request {
			sub := *req
			sub.Resources = nil
			return &sub
		})
		sub := sh.req.(*kmsg.DescribeConfigsRequest)
		sub.Resources = append(sub.Resources, res)
	}
	if len(shards) <= 1 {
		r.forward(anyNodeOf(shards, anyNode), req, nil)
		return
	}
	r.fanout(shards, func(done []*shard) {
		if sh := firstFailure(done); sh != nil {
			r.failed(sh.node, sh.err)
			return
		}
		type key struct {
			typ  kmsg.ConfigResourceType
			name string
		}
		byKey := map[key]kmsg.DescribeConfigsResponseResource{}
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, sh := range done {
			m := sh.resp.(*kmsg.DescribeConfigsResponse)
			resp.ThrottleMillis = max(resp.ThrottleMillis, m.ThrottleMillis)
			for _, res := range m.Resources {
				byKey[key{res.ResourceType, res.ResourceName}] = res
			}
		}
		for _, res := range req.Resources {
			if rr, ok := byKey[key{res.ResourceType, res.ResourceName}]; ok {
				resp.Resources = append(resp.Resources, rr)
			}
		}
		r.Respond(resp)
	})
}

// anyNodeOf returns the node of the one shard, or fallback.
func anyNodeOf(shards []*shard, fallback int32) int32 {
	if len(shards) == 1 {
		return shards[0].node
	}
	return fallback
}
