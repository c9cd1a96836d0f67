package server

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

// What DescribeConfigs, AlterConfigs and IncrementalAlterConfigs share
// (32_describe_configs.go, 33_alter_configs.go,
// 44_incremental_alter_configs.go): each request lists config resources,
// each resource is routed and authorized by its type and name alone, and
// each answer lists one result per resource, named the same way. So one
// routing, one split and merge and one check serve all three; each API
// file says only how its request and answer are read and made (a
// configAPI).

// configKey names a config resource, in a request and in its answer.
type configKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// configAPI is how one of the three APIs' requests and answers are read
// and made (newConfigAPI). Q is a request's resource, A an answer's. Its
// fields are immutable.
type configAPI[Q, A any] struct {
	resources func(kmsg.Request) []Q
	// with returns a copy of the request that names rs alone.
	with func(req kmsg.Request, rs []Q) kmsg.Request
	key  func(Q) configKey

	answered  func(kmsg.Response) []A
	setAnswer func(kmsg.Response, []A)
	answerKey func(A) configKey
	// denied is the answer of a resource the client may not touch.
	denied func(k configKey, code int16) A
}

// newConfigAPI makes the configAPI of a request type R (a pointer to S)
// and its answer type P from where their resources are (reqResources,
// answerResources), how each resource is named (key, answerKey), and how
// a denied resource is answered.
func newConfigAPI[S any, R interface {
	*S
	kmsg.Request
}, P kmsg.Response, Q, A any](reqResources func(R) *[]Q, answerResources func(P) *[]A,
	key func(Q) configKey, answerKey func(A) configKey, denied func(configKey, int16) A) configAPI[Q, A] {
	return configAPI[Q, A]{
		resources: func(req kmsg.Request) []Q { return *reqResources(req.(R)) },
		with: func(req kmsg.Request, rs []Q) kmsg.Request {
			sub := *req.(R) // a copy of the request: its version and flags
			*reqResources(&sub) = rs
			return R(&sub)
		},
		key:       key,
		answered:  func(resp kmsg.Response) []A { return *answerResources(resp.(P)) },
		setAnswer: func(resp kmsg.Response, as []A) { *answerResources(resp.(P)) = as },
		answerKey: answerKey,
		denied:    denied,
	}
}

// serve forwards a request to the upstream brokers its resources go to
// (configNode): as it is when they all go to one broker, else split by
// broker, each piece with its resources in request order, and the pieces'
// answers merged back in request order (mergeConfigAnswers). A piece that
// fails in transport closes the client's connection (route.go).
func (api configAPI[Q, A]) serve(s *Server, r *request) {
	anyNode := s.cl.Any()
	listed := func(id int32) bool { _, ok := s.cl.Addr(id); return ok }
	shards := api.shards(r.Msg, func(k configKey) int32 { return configNode(k, anyNode, listed) })
	switch len(shards) {
	case 0:
		r.forward(anyNode, r.Msg, nil) // no resource: upstream answers it
		return
	case 1:
		r.forward(shards[0].node, r.Msg, nil)
		return
	}
	r.fanout(shards, func(done []*shard) {
		if sh := firstFailure(done); sh != nil {
			r.failed(sh.node, sh.err)
			return
		}
		r.Respond(api.merge(r.Msg, done))
	})
}

// configNode returns the upstream broker a config resource goes to: the
// one a broker or broker-logger resource names by id, when the metadata
// lists it (listed); else anyNode. Kafka's brokers forward a topic's or a
// group's change to their controller, and answer a describe of either,
// so any broker will do; so for the cluster-wide default (a broker
// resource named ""). A broker the metadata does not list gets anyNode
// too, which answers as Kafka does for a broker id that is not its own.
func configNode(k configKey, anyNode int32, listed func(int32) bool) int32 {
	if k.typ != kmsg.ConfigResourceTypeBroker && k.typ != kmsg.ConfigResourceTypeBrokerLogger {
		return anyNode
	}
	id, err := strconv.ParseInt(k.name, 10, 32)
	if err != nil || id < 0 || !listed(int32(id)) {
		return anyNode
	}
	return int32(id)
}

// shards splits req by the node of each resource: a shard per node, in
// the order the nodes are first named, each a copy of req that names its
// resources in request order.
func (api configAPI[Q, A]) shards(req kmsg.Request, node func(configKey) int32) []*shard {
	byNode := map[int32]*shard{}
	var shards []*shard
	named := map[*shard][]Q{}
	for _, q := range api.resources(req) {
		sh := shardsByNode(byNode, &shards, node(api.key(q)), func() kmsg.Request { return nil })
		named[sh] = append(named[sh], q)
	}
	for _, sh := range shards {
		sh.req = api.with(req, named[sh])
	}
	return shards
}

// merge makes req's answer from its shards' answers: each resource of
// req, in request order, gets the next answer upstream gave for its type
// and name (a resource listed twice went to one broker, which answers
// each listing, or, as Kafka, once), and the answer has the largest
// throttle.
func (api configAPI[Q, A]) merge(req kmsg.Request, done []*shard) kmsg.Response {
	var throttle int32
	byKey := map[configKey][]A{}
	for _, sh := range done {
		if t, ok := sh.resp.(kmsg.ThrottleResponse); ok {
			ms, _ := t.Throttle()
			throttle = max(throttle, ms)
		}
		for _, a := range api.answered(sh.resp) {
			k := api.answerKey(a)
			byKey[k] = append(byKey[k], a)
		}
	}
	var merged []A
	for _, q := range api.resources(req) {
		k := api.key(q)
		if as := byKey[k]; len(as) > 0 {
			merged = append(merged, as[0])
			byKey[k] = as[1:]
		}
	}
	resp := req.ResponseKind()
	api.setAnswer(resp, merged)
	if t, ok := resp.(kmsg.SetThrottleResponse); ok {
		t.SetThrottle(throttle)
	}
	return resp
}

// check is the API's authorization (authz.go) for op on each resource, as
// configCode says: a denied resource is not forwarded, and is answered
// with its code after the others.
func (api configAPI[Q, A]) check(op kmsg.ACLOperation) check {
	return func(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
		return checked(req, api.resources(req),
			func(q Q) int16 { return configCode(c, op, api.key(q)) },
			func(kept []Q) kmsg.Request { return api.with(req, kept) },
			func(resp kmsg.Response, d refused[Q]) {
				api.setAnswer(resp, append(api.answered(resp), api.denied(api.key(d.item), d.code)))
			})
	}
}

// configCode is the code of op on a config resource, as Kafka checks it:
// op on the topic (TOPIC_AUTHORIZATION_FAILED, whether it exists or not),
// on the cluster for a broker, a broker logger or client metrics
// (CLUSTER_AUTHORIZATION_FAILED), on the group for a group
// (GROUP_AUTHORIZATION_FAILED); INVALID_REQUEST for a resource type Kafka
// does not know.
func configCode(c authz.Access, op kmsg.ACLOperation, k configKey) int16 {
	switch k.typ {
	case kmsg.ConfigResourceTypeTopic:
		return c.TopicCode(op, k.name)
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		return c.ClusterCode(op)
	case kmsg.ConfigResourceTypeGroupConfig:
		return c.GroupCode(op, k.name)
	}
	return kerr.InvalidRequest.Code
}
