package server

// The checks of the share-group APIs (KIP-932; authz.go). Kafka's
// KafkaApis checks them in their handlers, as the example broker does,
// not in package authz's gate, so the proxy's checks are whole here:
//
//	ShareGroupHeartbeat            READ GROUP, then DESCRIBE TOPIC per
//	                               subscribed topic
//	ShareFetch, ShareAcknowledge   READ GROUP, then READ TOPIC per topic
//	ShareGroupDescribe,            DESCRIBE GROUP per group
//	DescribeShareGroupOffsets
//	AlterShareGroupOffsets         READ GROUP, then READ TOPIC per topic
//	DeleteShareGroupOffsets        DELETE GROUP, then READ TOPIC per topic
//
// A denied group, or topic of a request naming one group, answers the
// whole request with GROUP_ or TOPIC_AUTHORIZATION_FAILED at its top
// (Kafka answers a denied topic of a ShareFetch per partition: not done
// here); a denied group of a request naming several answers that group.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
)

// deniedWhole answers a request with code at its top, forwarding nothing.
func deniedWhole(code int16) (kmsg.Request, func(kmsg.Response)) {
	return nil, func(resp kmsg.Response) {
		switch m := resp.(type) {
		case *kmsg.ShareGroupHeartbeatResponse:
			m.ErrorCode = code
		case *kmsg.ShareFetchResponse:
			m.ErrorCode = code
		case *kmsg.ShareAcknowledgeResponse:
			m.ErrorCode = code
		case *kmsg.AlterShareGroupOffsetsResponse:
			m.ErrorCode = code
		case *kmsg.DeleteShareGroupOffsetsResponse:
			m.ErrorCode = code
		}
	}
}

// groupThenTopics is the check of a request naming one group and topics:
// op on the group, then topicOp on each topic (by name, or by id when
// byID), the first denial answering the whole request.
func groupThenTopics(s *Server, c authz.Access, req kmsg.Request, op kmsg.ACLOperation, group string,
	topicOp kmsg.ACLOperation, names []string, ids [][16]byte) (kmsg.Request, func(kmsg.Response)) {
	if code := c.GroupCode(op, group); code != 0 {
		return deniedWhole(code)
	}
	for _, n := range names {
		if code := c.TopicCode(topicOp, n); code != 0 {
			return deniedWhole(code)
		}
	}
	for _, id := range ids {
		if code := s.topicCode(c, topicOp, "", id, true); code != 0 {
			return deniedWhole(code)
		}
	}
	return req, nil
}

func authorizeShareGroupHeartbeat(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	h := req.(*kmsg.ShareGroupHeartbeatRequest)
	return groupThenTopics(s, c, req, kmsg.ACLOperationRead, h.GroupID, kmsg.ACLOperationDescribe, h.SubscribedTopicNames, nil)
}

func authorizeShareFetch(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	f := req.(*kmsg.ShareFetchRequest)
	var ids [][16]byte
	for _, t := range f.Topics {
		ids = append(ids, t.TopicID)
	}
	return groupThenTopics(s, c, req, kmsg.ACLOperationRead, orEmpty(f.GroupID), kmsg.ACLOperationRead, nil, ids)
}

func authorizeShareAcknowledge(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	a := req.(*kmsg.ShareAcknowledgeRequest)
	var ids [][16]byte
	for _, t := range a.Topics {
		ids = append(ids, t.TopicID)
	}
	return groupThenTopics(s, c, req, kmsg.ACLOperationRead, orEmpty(a.GroupID), kmsg.ACLOperationRead, nil, ids)
}

func authorizeAlterShareGroupOffsets(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	a := req.(*kmsg.AlterShareGroupOffsetsRequest)
	var names []string
	for _, t := range a.Topics {
		names = append(names, t.Topic)
	}
	return groupThenTopics(s, c, req, kmsg.ACLOperationRead, a.GroupID, kmsg.ACLOperationRead, names, nil)
}

func authorizeDeleteShareGroupOffsets(s *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	d := req.(*kmsg.DeleteShareGroupOffsetsRequest)
	var names []string
	for _, t := range d.Topics {
		names = append(names, t.Topic)
	}
	return groupThenTopics(s, c, req, kmsg.ACLOperationDelete, d.GroupID, kmsg.ACLOperationRead, names, nil)
}

func authorizeShareGroupDescribe(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	d := req.(*kmsg.ShareGroupDescribeRequest)
	kept, denied := split(d.GroupIDs, func(g string) int16 { return c.GroupCode(kmsg.ACLOperationDescribe, g) })
	fwd := narrowed(req, kept, denied, func() kmsg.Request { q := *d; q.GroupIDs = kept; return &q })
	return fwd, func(resp kmsg.Response) {
		m := resp.(*kmsg.ShareGroupDescribeResponse)
		for i := range m.Groups {
			if g := &m.Groups[i]; g.ErrorCode == 0 && d.IncludeAuthorizedOperations {
				g.AuthorizedOperations = c.Operations(kmsg.ACLResourceTypeGroup, g.GroupID)
			}
		}
		for _, dg := range denied {
			g := kmsg.NewShareGroupDescribeResponseGroup()
			g.GroupID, g.ErrorCode = dg.item, dg.code
			m.Groups = append(m.Groups, g)
		}
	}
}

func authorizeDescribeShareGroupOffsets(_ *Server, c authz.Access, req kmsg.Request) (kmsg.Request, func(kmsg.Response)) {
	d := req.(*kmsg.DescribeShareGroupOffsetsRequest)
	return checked(req, d.Groups, func(g kmsg.DescribeShareGroupOffsetsRequestGroup) int16 {
		return c.GroupCode(kmsg.ACLOperationDescribe, g.GroupID)
	},
		func(kept []kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.Request {
			q := *d
			q.Groups = kept
			return &q
		},
		func(resp kmsg.Response, d refused[kmsg.DescribeShareGroupOffsetsRequestGroup]) {
			m := resp.(*kmsg.DescribeShareGroupOffsetsResponse)
			g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			g.GroupID, g.ErrorCode = d.item.GroupID, d.code
			m.Groups = append(m.Groups, g)
		})
}
