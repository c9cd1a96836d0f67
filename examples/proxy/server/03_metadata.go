package server

// Metadata: v0-v13, as upstream serves it.
//
// Forwarded to any upstream broker as the client sent it (auto-creation,
// topic ids, authorized operations and errors are upstream's), and the
// answer rewritten so that the client sees the proxy as its one broker:
// the broker list is the proxy alone (node.id, advertised host and port,
// no rack), it is the controller, and it leads every partition that has a
// leader upstream, as its one replica and in-sync replica. Leader epochs
// stay upstream's, so that the epochs clients send back (fetch's
// current_leader_epoch) are upstream's too. A partition with no leader
// upstream keeps leader -1 and its error. The proxy's own view of the
// cluster takes the answer in before the rewrite.
//
// Authorization (authz.go): DESCRIBE on each topic. A Metadata for all
// topics hides those the client may not describe; one that names them
// answers each TOPIC_AUTHORIZATION_FAILED, whether it exists or not, and
// does not forward it. Auto-creation needs CREATE on the cluster, else on
// the topic: a topic the client may describe but not create is forwarded
// with allow_auto_topic_creation off (v4+; the whole request's, so that
// a topic it may create asked for beside it is not created by that
// request), and answered TOPIC_AUTHORIZATION_FAILED if it does not exist,
// as Kafka; before v4, which always creates, such a topic is forwarded
// only if the proxy's metadata knows it. KIP-430's authorized operations
// are the client's, recomputed.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

func init() { serve(kmsg.Metadata, 0, 13, (*Server).handleMetadata).Handler.check = authorizeMetadata }

func authorizeMetadata(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	m := req.(*kmsg.MetadataRequest)
	if m.Topics == nil || (m.Version == 0 && len(m.Topics) == 0) {
		return req, func(resp kmsg.Response) {
			a := resp.(*kmsg.MetadataResponse)
			a.Topics = slices.DeleteFunc(a.Topics, func(t kmsg.MetadataResponseTopic) bool {
				return t.Topic == nil || !c.Sees(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, *t.Topic)
			})
			clientOperations(c, m, a)
		}
	}
	mayCreate := m.Version < 4 || m.AllowAutoTopicCreation
	if mayCreate {
		mayCreate = !c.Sees(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	noCreate := map[string]bool{} // described, but not to be created
	kept, denied := split(m.Topics, func(t kmsg.MetadataRequestTopic) int16 {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if code := s.topicCode(c, kmsg.ACLOperationDescribe, name, t.TopicID, t.Topic == nil); code != 0 || t.Topic == nil {
			return code
		}
		if mayCreate && !c.Sees(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeTopic, name) {
			if _, known := s.cl.TopicID(name); !known && m.Version < 4 {
				return kerr.TopicAuthorizationFailed.Code
			}
			noCreate[name] = true
		}
		return 0
	})
	fwd := *m
	fwd.Topics = append([]kmsg.MetadataRequestTopic{}, kept...) // empty, not nil: not all topics
	fwd.AllowAutoTopicCreation = fwd.AllowAutoTopicCreation && len(noCreate) == 0
	asked := map[string]bool{}
	for _, t := range kept {
		asked[topicKeyOf(t.Topic, t.TopicID)] = true
	}
	return &fwd, func(resp kmsg.Response) {
		a := resp.(*kmsg.MetadataResponse)
		// Only what was asked for: a v0 request left with no topic
		// is a request for all.
		a.Topics = slices.DeleteFunc(a.Topics, func(t kmsg.MetadataResponseTopic) bool {
			return !asked[topicKeyOf(t.Topic, [16]byte{})] && !asked[topicKeyOf(nil, t.TopicID)]
		})
		for i := range a.Topics {
			if t := &a.Topics[i]; t.Topic != nil && noCreate[*t.Topic] && t.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				t.ErrorCode = kerr.TopicAuthorizationFailed.Code
			}
		}
		clientOperations(c, m, a)
		for _, d := range denied {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.TopicID, t.ErrorCode = d.item.Topic, d.item.TopicID, d.code
			t.Partitions = []kmsg.MetadataResponseTopicPartition{}
			a.Topics = append(a.Topics, t)
		}
	}
}

// topicKeyOf is a topic of a Metadata request or answer, by name or, when
// it has none, by id.
func topicKeyOf(name *string, id [16]byte) string {
	if name != nil {
		return "n" + *name
	}
	return "i" + string(id[:])
}

// clientOperations replaces the authorized operations upstream computed
// for the proxy's principal with the client's (KIP-430), where asked.
func clientOperations(c authz.Access, req *kmsg.MetadataRequest, a *kmsg.MetadataResponse) {
	if req.IncludeClusterAuthorizedOperations && a.Version >= 8 && a.Version <= 10 {
		a.AuthorizedOperations = 0
		if c.Allows(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
			a.AuthorizedOperations = c.Operations(kmsg.ACLResourceTypeCluster, acl.ClusterName)
		}
	}
	if req.IncludeTopicAuthorizedOperations && a.Version >= 8 {
		for i := range a.Topics {
			if t := &a.Topics[i]; t.ErrorCode == 0 && t.Topic != nil {
				t.AuthorizedOperations = c.Operations(kmsg.ACLResourceTypeTopic, *t.Topic)
			}
		}
	}
}

func (s *Server) handleMetadata(r *request) {
	req := r.Msg.(*kmsg.MetadataRequest)
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	r.forward(s.cl.Any(), req, func(resp kmsg.Response) {
		m := resp.(*kmsg.MetadataResponse)
		s.cl.Absorb(m, all)
		s.rewriteMetadata(m)
	})
}

// rewriteMetadata makes the proxy the one broker of m.
func (s *Server) rewriteMetadata(m *kmsg.MetadataResponse) {
	self := s.cfg.NodeID
	m.Brokers = []kmsg.MetadataResponseBroker{{NodeID: self, Host: s.host, Port: s.port}}
	m.ControllerID = self
	for i := range m.Topics {
		for j := range m.Topics[i].Partitions {
			p := &m.Topics[i].Partitions[j]
			if p.Leader >= 0 {
				p.Leader = self
			}
			p.Replicas = []int32{self}
			p.ISR = []int32{self}
			p.OfflineReplicas = []int32{}
		}
	}
}
