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
//
// Authorization (authz.go): DESCRIBE_CONFIGS on each resource's topic
// (TOPIC_AUTHORIZATION_FAILED), or on the cluster for a broker, a broker
// logger or client metrics (CLUSTER_AUTHORIZATION_FAILED), or on the
// group (GROUP_AUTHORIZATION_FAILED); a denied resource is not
// forwarded, and a resource type the proxy does not know answers
// INVALID_REQUEST.

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() {
	serve(kmsg.DescribeConfigs, 0, 4, (*Server).handleDescribeConfigs).Handler.check = authorizeDescribeConfigs
}

func authorizeDescribeConfigs(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	d := req.(*kmsg.DescribeConfigsRequest)
	kept, denied := split(d.Resources, func(r kmsg.DescribeConfigsRequestResource) int16 {
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			return c.TopicCode(kmsg.ACLOperationDescribeConfigs, r.ResourceName)
		case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
			return c.ClusterCode(kmsg.ACLOperationDescribeConfigs)
		case kmsg.ConfigResourceTypeGroupConfig:
			return c.GroupCode(kmsg.ACLOperationDescribeConfigs, r.ResourceName)
		}
		return kerr.InvalidRequest.Code
	})
	fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *d; q.Resources = kept; return &q })
	return fwd, func(resp kmsg.Response) {
		m := resp.(*kmsg.DescribeConfigsResponse)
		for _, dr := range denied {
			r := kmsg.NewDescribeConfigsResponseResource()
			r.ResourceType, r.ResourceName, r.ErrorCode = dr.item.ResourceType, dr.item.ResourceName, dr.code
			m.Resources = append(m.Resources, r)
		}
	}
}

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
