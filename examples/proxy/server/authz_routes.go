package server

// The checks of the APIs routes.go forwards as they are (authz.go; the
// table is package authz's):
//
//	JoinGroup, Heartbeat, LeaveGroup,     the gate alone (READ GROUP,
//	SyncGroup, InitProducerID,            WRITE TRANSACTIONAL_ID,
//	AddOffsetsToTxn, EndTxn,              IDEMPOTENT_WRITE...)
//	ConsumerGroupHeartbeat
//	OffsetCommit, TxnOffsetCommit         the gate, then READ TOPIC per topic
//	OffsetDelete                          the gate (DELETE GROUP), then READ TOPIC
//	CreateTopics                          CREATE CLUSTER, else CREATE TOPIC per
//	                                      topic; DESCRIBE_CONFIGS TOPIC for its
//	                                      configs (v5+)
//	DeleteTopics                          DELETE CLUSTER, else DESCRIBE and
//	                                      DELETE TOPIC per topic
//	CreatePartitions                      ALTER TOPIC per topic
//	AlterShareGroupOffsets,               share_authz.go
//	DeleteShareGroupOffsets
//	AddPartitionsToTxn (v0-v3)            the gate, then WRITE TOPIC per topic:
//	                                      one denied, nothing is added (the
//	                                      others OPERATION_NOT_ATTEMPTED)

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

// routeChecks are the checks of routes.go's APIs, set after they are
// registered.
var routeChecks = map[kmsg.Key]check{
	kmsg.JoinGroup:          whole,
	kmsg.Heartbeat:          whole,
	kmsg.LeaveGroup:         whole,
	kmsg.SyncGroup:          whole,
	kmsg.InitProducerID:     whole,
	kmsg.AddOffsetsToTxn:    whole,
	kmsg.EndTxn:             whole,
	kmsg.OffsetCommit:       authorizeOffsetCommit,
	kmsg.TxnOffsetCommit:    authorizeTxnOffsetCommit,
	kmsg.OffsetDelete:       authorizeOffsetDelete,
	kmsg.CreateTopics:       authorizeCreateTopics,
	kmsg.DeleteTopics:       authorizeDeleteTopics,
	kmsg.CreatePartitions:   authorizeCreatePartitions,
	kmsg.AddPartitionsToTxn: authorizeAddPartitionsToTxn,

	// KIP-848's heartbeat names its group, as Heartbeat does.
	kmsg.ConsumerGroupHeartbeat: whole,
	// KIP-932's group offsets: share_authz.go.
	kmsg.AlterShareGroupOffsets:  authorizeAlterShareGroupOffsets,
	kmsg.DeleteShareGroupOffsets: authorizeDeleteShareGroupOffsets,
}

func authorizeOffsetCommit(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	o := req.(*kmsg.OffsetCommitRequest)
	return checked(req, o.Topics, func(t kmsg.OffsetCommitRequestTopic) int16 { return c.TopicCode(kmsg.ACLOperationRead, t.Topic) },
		func(kept []kmsg.OffsetCommitRequestTopic) kmsg.Request { q := *o; q.Topics = kept; return &q },
		func(resp kmsg.Response, d refused[kmsg.OffsetCommitRequestTopic]) {
			m := resp.(*kmsg.OffsetCommitResponse)
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = d.item.Topic
			for _, p := range d.item.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: d.code})
			}
			m.Topics = append(m.Topics, rt)
		})
}

func authorizeTxnOffsetCommit(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	o := req.(*kmsg.TxnOffsetCommitRequest)
	return checked(req, o.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) int16 { return c.TopicCode(kmsg.ACLOperationRead, t.Topic) },
		func(kept []kmsg.TxnOffsetCommitRequestTopic) kmsg.Request { q := *o; q.Topics = kept; return &q },
		func(resp kmsg.Response, d refused[kmsg.TxnOffsetCommitRequestTopic]) {
			m := resp.(*kmsg.TxnOffsetCommitResponse)
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = d.item.Topic
			for _, p := range d.item.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.TxnOffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: d.code})
			}
			m.Topics = append(m.Topics, rt)
		})
}

func authorizeOffsetDelete(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	o := req.(*kmsg.OffsetDeleteRequest)
	return checked(req, o.Topics, func(t kmsg.OffsetDeleteRequestTopic) int16 { return c.TopicCode(kmsg.ACLOperationRead, t.Topic) },
		func(kept []kmsg.OffsetDeleteRequestTopic) kmsg.Request { q := *o; q.Topics = kept; return &q },
		func(resp kmsg.Response, d refused[kmsg.OffsetDeleteRequestTopic]) {
			m := resp.(*kmsg.OffsetDeleteResponse)
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = d.item.Topic
			for _, p := range d.item.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: d.code})
			}
			m.Topics = append(m.Topics, rt)
		})
}

func authorizeCreateTopics(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	ct := req.(*kmsg.CreateTopicsRequest)
	clusterWide := c.Sees(kmsg.ACLOperationCreate, kmsg.ACLResourceTypeCluster, acl.ClusterName)
	kept, denied := split(ct.Topics, func(t kmsg.CreateTopicsRequestTopic) int16 {
		if clusterWide {
			return 0
		}
		return c.TopicCode(kmsg.ACLOperationCreate, t.Topic)
	})
	fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *ct; q.Topics = kept; return &q })
	return fwd, func(resp kmsg.Response) {
		m := resp.(*kmsg.CreateTopicsResponse)
		for i := range m.Topics {
			// A topic's configs are upstream's answer to the proxy's
			// principal: the client sees them with DESCRIBE_CONFIGS.
			if t := &m.Topics[i]; m.Version >= 5 && t.ErrorCode == 0 &&
				!c.Sees(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, t.Topic) {
				t.Configs, t.ConfigErrorCode = nil, kerr.TopicAuthorizationFailed.Code
			}
		}
		for _, d := range denied {
			t := kmsg.NewCreateTopicsResponseTopic()
			t.Topic, t.ErrorCode = d.item.Topic, d.code
			m.Topics = append(m.Topics, t)
		}
	}
}

func authorizeDeleteTopics(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	dt := req.(*kmsg.DeleteTopicsRequest)
	clusterWide := c.Sees(kmsg.ACLOperationDelete, kmsg.ACLResourceTypeCluster, acl.ClusterName)
	code := func(name string, id [16]byte, byID bool) int16 {
		if code := s.topicCode(c, kmsg.ACLOperationDescribe, name, id, byID); code != 0 || clusterWide {
			return code
		}
		if byID {
			name, _ = s.cl.TopicName(id)
		}
		return c.TopicCode(kmsg.ACLOperationDelete, name)
	}
	if dt.Version < 6 {
		kept, denied := split(dt.TopicNames, func(name string) int16 { return code(name, [16]byte{}, false) })
		fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *dt; q.TopicNames = kept; return &q })
		return fwd, func(resp kmsg.Response) {
			m := resp.(*kmsg.DeleteTopicsResponse)
			for _, d := range denied {
				t := kmsg.NewDeleteTopicsResponseTopic()
				t.Topic, t.ErrorCode = kmsg.StringPtr(d.item), d.code
				m.Topics = append(m.Topics, t)
			}
		}
	}
	kept, denied := split(dt.Topics, func(t kmsg.DeleteTopicsRequestTopic) int16 {
		if t.Topic != nil {
			return code(*t.Topic, t.TopicID, false)
		}
		return code("", t.TopicID, true)
	})
	fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *dt; q.Topics = kept; return &q })
	return fwd, func(resp kmsg.Response) {
		m := resp.(*kmsg.DeleteTopicsResponse)
		for _, d := range denied {
			t := kmsg.NewDeleteTopicsResponseTopic()
			t.Topic, t.TopicID, t.ErrorCode = d.item.Topic, d.item.TopicID, d.code
			m.Topics = append(m.Topics, t)
		}
	}
}

func authorizeCreatePartitions(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	cp := req.(*kmsg.CreatePartitionsRequest)
	return checked(req, cp.Topics, func(t kmsg.CreatePartitionsRequestTopic) int16 { return c.TopicCode(kmsg.ACLOperationAlter, t.Topic) },
		func(kept []kmsg.CreatePartitionsRequestTopic) kmsg.Request { q := *cp; q.Topics = kept; return &q },
		func(resp kmsg.Response, d refused[kmsg.CreatePartitionsRequestTopic]) {
			m := resp.(*kmsg.CreatePartitionsResponse)
			t := kmsg.NewCreatePartitionsResponseTopic()
			t.Topic, t.ErrorCode = d.item.Topic, d.code
			m.Topics = append(m.Topics, t)
		})
}

func authorizeAddPartitionsToTxn(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	a := req.(*kmsg.AddPartitionsToTxnRequest)
	_, denied := split(a.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) int16 { return c.TopicCode(kmsg.ACLOperationWrite, t.Topic) })
	if len(denied) == 0 {
		return req, nil
	}
	// One denied topic and nothing is added, as Kafka: the denied answer
	// their code, the others OPERATION_NOT_ATTEMPTED.
	codes := map[string]int16{}
	for _, d := range denied {
		codes[d.item.Topic] = d.code
	}
	return nil, func(resp kmsg.Response) {
		m := resp.(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range a.Topics {
			code, ok := codes[t.Topic]
			if !ok {
				code = kerr.OperationNotAttempted.Code
			}
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p, ErrorCode: code})
			}
			m.Topics = append(m.Topics, rt)
		}
	}
}
