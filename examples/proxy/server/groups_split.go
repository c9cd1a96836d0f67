package server

import "github.com/twmb/franz-go/pkg/kmsg"

// byGroups answers a request that names several groups (DescribeGroups,
// DeleteGroups, ConsumerGroupDescribe): it is split by the groups'
// coordinators, one piece per coordinator, made by sub with the groups it
// names in request order; the pieces' groups (read by answered) are merged
// back in request order and handed to respond with the largest throttle.
// A coordinator that answers a group NOT_COORDINATOR or
// COORDINATOR_NOT_AVAILABLE is forgotten; a request that names no group
// goes to any broker. A piece that fails in transport closes the client's
// connection (route.go).
func byGroups[G any](s *Server, r *request, groups []string, sub func(groups []string) kmsg.Request,
	answered func(kmsg.Response) (throttle int32, gs []G), id func(G) (group string, code int16),
	respond func(throttle int32, gs []G)) {
	s.coordinators(coordinatorGroup, groups, func(nodes map[string]int32) {
		byNode := map[int32]*shard{}
		var shards []*shard
		named := map[*shard][]string{}
		for _, g := range groups {
			sh := shardsByNode(byNode, &shards, nodes[g], func() kmsg.Request { return nil })
			named[sh] = append(named[sh], g)
		}
		for _, sh := range shards {
			sh.req = sub(named[sh])
		}
		if len(shards) == 0 {
			shards = append(shards, &shard{node: s.cl.Any(), req: r.Msg}) // no group: upstream answers it
		}
		r.fanout(shards, func(done []*shard) {
			if sh := firstFailure(done); sh != nil {
				r.failed(sh.node, sh.err)
				return
			}
			var throttle int32
			byGroup := map[string]G{}
			for _, sh := range done {
				t, gs := answered(sh.resp)
				throttle = max(throttle, t)
				for _, g := range gs {
					name, code := id(g)
					if staleCoordinator(code) {
						s.cl.ForgetCoordinator(coordinatorGroup, name)
					}
					byGroup[name] = g
				}
			}
			var merged []G
			for _, g := range groups {
				if rg, ok := byGroup[g]; ok {
					merged = append(merged, rg)
				}
			}
			respond(throttle, merged)
		})
	})
}
