package server

// Authorization, as Kafka's KafkaApis and AuthHelper check each request
// against its authorizer (package acl, Kafka's StandardAuthorizer), when
// authorizer.class.name turns one on. Without one every check below is
// free and allows: the handlers answer as they always have.
//
// # The checks
//
// Every API is checked with Kafka's operation on Kafka's resource, and a
// denial answered with Kafka's code where Kafka puts it. A check on the
// whole request runs before the handler, and before any routing
// (NOT_COORDINATOR, NOT_CONTROLLER), as Kafka checks before asking its
// coordinators (gates, below); the others run in the handlers, per topic,
// group or transactional id:
//
//	API                        operation, resource                  denied
//	Produce (0)                WRITE TRANSACTIONAL_ID, if the batches TRANSACTIONAL_ID_AUTHORIZATION_FAILED, every partition
//	                           are transactional
//	                           WRITE TOPIC                          TOPIC_AUTHORIZATION_FAILED, its partitions
//	Fetch (1)                  READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	  from a replica           CLUSTER_ACTION CLUSTER               TOPIC_AUTHORIZATION_FAILED, every partition (as Kafka)
//	ListOffsets (2)            DESCRIBE TOPIC                       TOPIC_AUTHORIZATION_FAILED, its partitions
//	Metadata (3)               DESCRIBE TOPIC                       all topics: hidden; named: TOPIC_AUTHORIZATION_FAILED
//	  auto-creation            CREATE CLUSTER, else CREATE TOPIC    TOPIC_AUTHORIZATION_FAILED
//	  cluster operations v8-10 DESCRIBE CLUSTER                     0 (no operation)
//	OffsetCommit (8)           READ GROUP                           GROUP_AUTHORIZATION_FAILED, every partition
//	                           READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	OffsetFetch (9)            DESCRIBE GROUP                       GROUP_AUTHORIZATION_FAILED (top, or the group's from v8)
//	                           DESCRIBE TOPIC                       TOPIC_AUTHORIZATION_FAILED, its partitions; all: hidden
//	FindCoordinator (10)       DESCRIBE GROUP, TRANSACTIONAL_ID     GROUP_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED, per key
//	JoinGroup (11), Heartbeat  READ GROUP                           GROUP_AUTHORIZATION_FAILED
//	(12), LeaveGroup (13),
//	SyncGroup (14)
//	DescribeGroups (15)        DESCRIBE GROUP                       GROUP_AUTHORIZATION_FAILED, per group
//	ListGroups (16)            DESCRIBE CLUSTER, else DESCRIBE GROUP groups not described are hidden
//	CreateTopics (19)          CREATE CLUSTER, else CREATE TOPIC    TOPIC_AUTHORIZATION_FAILED, per topic
//	                           DESCRIBE_CONFIGS TOPIC (v5+)         no configs, topic_config_error_code
//	DeleteTopics (20)          DELETE TOPIC (DESCRIBE, by id)       TOPIC_AUTHORIZATION_FAILED (UNKNOWN_TOPIC_ID), per topic
//	DeleteRecords (21)         DELETE TOPIC                         TOPIC_AUTHORIZATION_FAILED, its partitions
//	InitProducerId (22)        WRITE TRANSACTIONAL_ID               TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//	  without one              IDEMPOTENT_WRITE CLUSTER, else       CLUSTER_AUTHORIZATION_FAILED
//	                           WRITE on some TOPIC
//	OffsetForLeaderEpoch (23)  CLUSTER_ACTION CLUSTER, else         TOPIC_AUTHORIZATION_FAILED, its partitions
//	                           DESCRIBE TOPIC
//	AddPartitionsToTxn (24)    v4+ (brokers): CLUSTER_ACTION        CLUSTER_AUTHORIZATION_FAILED, top
//	                           WRITE TRANSACTIONAL_ID               TRANSACTIONAL_ID_AUTHORIZATION_FAILED, its partitions
//	                           WRITE TOPIC                          TOPIC_AUTHORIZATION_FAILED; others OPERATION_NOT_ATTEMPTED
//	AddOffsetsToTxn (25)       WRITE TRANSACTIONAL_ID, READ GROUP   TRANSACTIONAL_ID_/GROUP_AUTHORIZATION_FAILED
//	EndTxn (26)                WRITE TRANSACTIONAL_ID               TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//	WriteTxnMarkers (27)       CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, every partition
//	TxnOffsetCommit (28)       WRITE TRANSACTIONAL_ID, READ GROUP   TRANSACTIONAL_ID_/GROUP_AUTHORIZATION_FAILED, every partition
//	                           READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	DescribeAcls (29)          DESCRIBE CLUSTER                     CLUSTER_AUTHORIZATION_FAILED (no authorizer: SECURITY_DISABLED)
//	CreateAcls (30),           ALTER CLUSTER                        CLUSTER_AUTHORIZATION_FAILED, every entry (no authorizer:
//	DeleteAcls (31)                                                 SECURITY_DISABLED)
//	DescribeConfigs (32)       DESCRIBE_CONFIGS TOPIC, or CLUSTER   TOPIC_/CLUSTER_AUTHORIZATION_FAILED, per resource
//	                           for a broker
//	DeleteGroups (42)          DELETE GROUP                         GROUP_AUTHORIZATION_FAILED, per group
//	OffsetDelete (47)          DELETE GROUP                         GROUP_AUTHORIZATION_FAILED, top
//	                           READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	DescribeUserScram... (50)  DESCRIBE CLUSTER                     CLUSTER_AUTHORIZATION_FAILED, top
//	AlterUserScram... (51)     ALTER CLUSTER                        CLUSTER_AUTHORIZATION_FAILED, every user
//	AlterPartition (56)        CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, top
//	DescribeProducers (61)     READ TOPIC                           TOPIC_AUTHORIZATION_FAILED, its partitions
//	BrokerRegistration (62)    CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, top
//	BrokerHeartbeat (63)       CLUSTER_ACTION CLUSTER               CLUSTER_AUTHORIZATION_FAILED, top
//	DescribeTransactions (65)  DESCRIBE TRANSACTIONAL_ID            TRANSACTIONAL_ID_AUTHORIZATION_FAILED, per id;
//	                           DESCRIBE TOPIC                       its topics not described are left out
//	ListTransactions (66)      DESCRIBE TRANSACTIONAL_ID            ids not described are hidden
//	ApiVersions, SaslHandshake, SaslAuthenticate: none.
//
// An unauthorized topic is answered TOPIC_AUTHORIZATION_FAILED whether it
// exists or not, before any other check of it, so that its existence is
// not disclosed, as Kafka answers. KIP-430's authorized operations
// (Metadata's topics and cluster, DescribeGroups) are the operations
// acl.Supported lists for the resource that the principal is allowed;
// without an authorizer, all of them, as Kafka answers; when not asked
// for, -2147483648.
//
// # Principals
//
// A request's principal is its connection's (kafkanet): User:ANONYMOUS on
// PLAINTEXT and on SSL without a client certificate, User:<subject> with
// one, User:<name> after SASL; its host is the client's IP address. The
// brokers of a cluster reach each other over their inter-broker listener
// for what needs CLUSTER_ACTION (replica fetches, AlterPartition,
// BrokerHeartbeat, BrokerRegistration, WriteTxnMarkers, KIP-890's
// AddPartitionsToTxn): over SSL as their certificate's subject, which
// super.users should list; over PLAINTEXT as User:ANONYMOUS, which it
// must list then (config_security.go refuses a cluster's config that does
// not), making a super user of every client of that listener too: keep
// it private, and give clients a secure listener beside it.
//
// # The bindings
//
// The authorizer holds the bindings of the metadata log's image as this
// broker applied it (followACLs, on the log's apply goroutine): every
// broker of a cluster authorizes against the same bindings once it has
// applied the record that changed them. A broker alone, whose metadata log
// is in memory, keeps its bindings (and its SCRAM credentials) in
// log.dirs (durable.go, keepSecurity) and seeds its log with them at
// start.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/acl"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// The resource types and operations the checks name, short.
const (
	topicResource = kmsg.ACLResourceTypeTopic
	groupResource = kmsg.ACLResourceTypeGroup
	clusterRes    = kmsg.ACLResourceTypeCluster
	txnResource   = kmsg.ACLResourceTypeTransactionalId

	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opClusterAction   = kmsg.ACLOperationClusterAction
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

// refuseUnauthorized counts a denied check in broker_refusals_total.
const refuseUnauthorized = "unauthorized"

// access is a request's client as the authorizer sees it, read once per
// request. Its zero value, what a broker without an authorizer hands out,
// allows everything at no cost.
type access struct {
	a         *acl.Authorizer // nil: no authorizer
	r         *kafkanet.Request
	principal string
	host      string // the client's IP address
}

// access returns r's client as the authorizer sees it.
func (s *Server) access(r *kafkanet.Request) access {
	if s.authz == nil {
		return access{}
	}
	return access{a: s.authz, r: r, principal: r.Principal(), host: clientIP(r.RemoteAddr())}
}

// allows reports whether the client may do op on the resource, and
// counts and logs a denial (at most once a minute per client host), as
// Kafka's authorizer logs the requests it denies. Free without an
// authorizer; with one, a check that allows takes no lock and allocates
// nothing (package acl).
func (c access) allows(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if c.a == nil || c.a.Authorize(c.principal, c.host, op, rt, name) {
		return true
	}
	c.r.Refuse(refuseUnauthorized, zap.String("principal", c.principal), zap.String("api", kmsg.NameForKey(c.r.Msg.Key())),
		zap.Stringer("operation", op), zap.Stringer("resource_type", rt), zap.String("resource", name))
	return false
}

// sees is allows without the log: for the checks whose denial is no
// refusal but a filter (the topics of a Metadata for all, the groups
// ListGroups lists) or a first try before another (CREATE on the
// cluster before CREATE on the topic), as Kafka passes logIfDenied=false.
func (c access) sees(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return c.a == nil || c.a.Authorize(c.principal, c.host, op, rt, name)
}

// seesAny reports whether the client may do op on some resource of type
// rt (Kafka's authorizeByResourceType), for a request that names none.
func (c access) seesAny(op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	return c.a == nil || c.a.AuthorizeAny(c.principal, c.host, op, rt)
}

// on reports whether an authorizer checks this client.
func (c access) on() bool { return c.a != nil }

// operations returns KIP-430's authorized_operations for the resource:
// the bitfield of the operations acl.Supported lists for rt that the
// client may do; without an authorizer, all of them, as Kafka's
// AuthHelper.authorizedOperations answers.
func (c access) operations(rt kmsg.ACLResourceType, name string) int32 {
	if c.a == nil {
		return acl.Supported(rt).Bitfield(rt)
	}
	return c.a.AuthorizedOperations(c.principal, c.host, rt, name).Bitfield(rt)
}

// clientIP returns the IP address of a client's address, as the bindings'
// hosts name it.
func clientIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// topicCode is the error code of a topic the client may not op: 0 when
// allowed, TOPIC_AUTHORIZATION_FAILED otherwise.
func (c access) topicCode(op kmsg.ACLOperation, topic string) int16 {
	if c.allows(op, topicResource, topic) {
		return 0
	}
	return kerr.TopicAuthorizationFailed.Code
}

// gate answers r at once, and reports so, when its principal may not make
// it at all (gates); free without an authorizer. A refused acks=0 produce
// closes the connection, as Kafka signals its failures.
func (s *Server) gate(r *kafkanet.Request) bool {
	if s.authz == nil {
		return false
	}
	check := gates[kmsg.Key(r.Msg.Key())]
	if check == nil {
		return false
	}
	code := check(s.access(r), r.Msg)
	if code == 0 {
		return false
	}
	if p, ok := r.Msg.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		r.HangUp()
		return true
	}
	r.Respond(errorResponse(r.Msg, code))
	return true
}

// gates are the checks on a whole request (see the table above): each
// returns the code the request is answered with wherever its response
// carries one, or 0 to hand it to its handler.
var gates = map[kmsg.Key]func(c access, req kmsg.Request) int16{
	kmsg.Produce: func(c access, req kmsg.Request) int16 {
		p := req.(*kmsg.ProduceRequest)
		if !transactionalBatches(p) {
			return 0
		}
		if p.TransactionID == nil || !c.allows(opWrite, txnResource, *p.TransactionID) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return 0
	},
	kmsg.OffsetCommit: func(c access, req kmsg.Request) int16 {
		return c.groupCode(opRead, req.(*kmsg.OffsetCommitRequest).Group)
	},
	kmsg.OffsetFetch: func(c access, req kmsg.Request) int16 {
		if f := req.(*kmsg.OffsetFetchRequest); f.Version < 8 {
			return c.groupCode(opDescribe, f.Group)
		}
		return 0 // each group of v8+ in its handler
	},
	kmsg.JoinGroup: func(c access, req kmsg.Request) int16 {
		return c.groupCode(opRead, req.(*kmsg.JoinGroupRequest).Group)
	},
	kmsg.Heartbeat: func(c access, req kmsg.Request) int16 {
		return c.groupCode(opRead, req.(*kmsg.HeartbeatRequest).Group)
	},
	kmsg.LeaveGroup: func(c access, req kmsg.Request) int16 {
		return c.groupCode(opRead, req.(*kmsg.LeaveGroupRequest).Group)
	},
	kmsg.SyncGroup: func(c access, req kmsg.Request) int16 {
		return c.groupCode(opRead, req.(*kmsg.SyncGroupRequest).Group)
	},
	kmsg.InitProducerID: func(c access, req kmsg.Request) int16 {
		if id := req.(*kmsg.InitProducerIDRequest).TransactionalID; id != nil {
			return c.txnCode(*id)
		}
		// KIP-679: an idempotent producer needs IDEMPOTENT_WRITE on the
		// cluster, or WRITE on some topic (Kafka 3.0+).
		if c.sees(opIdempotentWrite, clusterRes, acl.ClusterName) || c.seesAny(opWrite, topicResource) {
			return 0
		}
		return c.clusterCode(opIdempotentWrite)
	},
	kmsg.AddPartitionsToTxn: func(c access, req kmsg.Request) int16 {
		if a := req.(*kmsg.AddPartitionsToTxnRequest); a.Version < 4 {
			return c.txnCode(a.TransactionalID)
		}
		return c.clusterCode(opClusterAction) // a broker's KIP-890 check; each transaction in the handler
	},
	kmsg.AddOffsetsToTxn: func(c access, req kmsg.Request) int16 {
		a := req.(*kmsg.AddOffsetsToTxnRequest)
		if code := c.txnCode(a.TransactionalID); code != 0 {
			return code
		}
		return c.groupCode(opRead, a.Group)
	},
	kmsg.EndTxn: func(c access, req kmsg.Request) int16 {
		return c.txnCode(req.(*kmsg.EndTxnRequest).TransactionalID)
	},
	kmsg.WriteTxnMarkers: func(c access, _ kmsg.Request) int16 { return c.clusterCode(opClusterAction) },
	kmsg.TxnOffsetCommit: func(c access, req kmsg.Request) int16 {
		t := req.(*kmsg.TxnOffsetCommitRequest)
		if code := c.txnCode(t.TransactionalID); code != 0 {
			return code
		}
		return c.groupCode(opRead, t.Group)
	},
	kmsg.DescribeACLs: func(c access, _ kmsg.Request) int16 { return c.clusterCode(opDescribe) },
	kmsg.CreateACLs:   func(c access, _ kmsg.Request) int16 { return c.clusterCode(opAlter) },
	kmsg.DeleteACLs:   func(c access, _ kmsg.Request) int16 { return c.clusterCode(opAlter) },
	kmsg.OffsetDelete: func(c access, req kmsg.Request) int16 {
		return c.groupCode(opDelete, req.(*kmsg.OffsetDeleteRequest).Group)
	},
	kmsg.DescribeUserSCRAMCredentials: func(c access, _ kmsg.Request) int16 { return c.clusterCode(opDescribe) },
	kmsg.AlterUserSCRAMCredentials:    func(c access, _ kmsg.Request) int16 { return c.clusterCode(opAlter) },
	kmsg.AlterPartition:               func(c access, _ kmsg.Request) int16 { return c.clusterCode(opClusterAction) },
	kmsg.BrokerRegistration:           func(c access, _ kmsg.Request) int16 { return c.clusterCode(opClusterAction) },
	kmsg.BrokerHeartbeat:              func(c access, _ kmsg.Request) int16 { return c.clusterCode(opClusterAction) },
}

// groupCode is GROUP_AUTHORIZATION_FAILED unless the client may op on
// group.
func (c access) groupCode(op kmsg.ACLOperation, group string) int16 {
	if c.allows(op, groupResource, group) {
		return 0
	}
	return kerr.GroupAuthorizationFailed.Code
}

// txnCode is TRANSACTIONAL_ID_AUTHORIZATION_FAILED unless the client may
// WRITE id.
func (c access) txnCode(id string) int16 {
	if c.allows(opWrite, txnResource, id) {
		return 0
	}
	return kerr.TransactionalIDAuthorizationFailed.Code
}

// clusterCode is CLUSTER_AUTHORIZATION_FAILED unless the client may op on
// the cluster.
func (c access) clusterCode(op kmsg.ACLOperation) int16 {
	if c.allows(op, clusterRes, acl.ClusterName) {
		return 0
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// transactionalBatches reports whether a produce holds a transactional
// batch (Kafka's RequestUtils.hasTransactionalRecords).
func transactionalBatches(p *kmsg.ProduceRequest) bool {
	for _, t := range p.Topics {
		for _, rp := range t.Partitions {
			if _, _, ok := storage.TransactionalProducer(rp.Records); ok {
				return true
			}
		}
	}
	return false
}

// errorResponse returns req's response with code wherever it carries an
// error (Kafka's AbstractRequest.getErrorResponse): at the top, or for
// each partition, transaction, user, creation or filter the request
// names.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch resp := resp.(type) {
	case *kmsg.ProduceResponse:
		for _, rt := range req.(*kmsg.ProduceRequest).Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.BaseOffset = rp.Partition, code, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.InitProducerIDResponse:
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
	case *kmsg.AddPartitionsToTxnResponse:
		a := req.(*kmsg.AddPartitionsToTxnRequest)
		if a.Version >= 4 {
			resp.ErrorCode = code
			break
		}
		for _, rt := range a.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
	case *kmsg.AddOffsetsToTxnResponse:
		resp.ErrorCode = code
	case *kmsg.EndTxnResponse:
		resp.ErrorCode = code
	case *kmsg.WriteTxnMarkersResponse:
		for _, rm := range req.(*kmsg.WriteTxnMarkersRequest).Markers {
			sm := kmsg.NewWriteTxnMarkersResponseMarker()
			sm.ProducerID = rm.ProducerID
			for _, rt := range rm.Topics {
				st := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
				st.Topic = rt.Topic
				for _, p := range rt.Partitions {
					sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
					sp.Partition, sp.ErrorCode = p, code
					st.Partitions = append(st.Partitions, sp)
				}
				sm.Topics = append(sm.Topics, st)
			}
			resp.Markers = append(resp.Markers, sm)
		}
	case *kmsg.AlterPartitionResponse:
		resp.ErrorCode = code
	case *kmsg.BrokerRegistrationResponse:
		resp.ErrorCode, resp.BrokerEpoch = code, -1
	case *kmsg.BrokerHeartbeatResponse:
		resp.ErrorCode, resp.IsFenced = code, true
	case *kmsg.DescribeUserSCRAMCredentialsResponse:
		resp.ErrorCode = code
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		a := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
		seen := make(map[string]bool)
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = user, code
				resp.Results = append(resp.Results, res)
			}
		}
		for _, d := range a.Deletions {
			add(d.Name)
		}
		for _, u := range a.Upsertions {
			add(u.Name)
		}
	case *kmsg.DescribeACLsResponse:
		resp.ErrorCode = code
	case *kmsg.CreateACLsResponse:
		for range req.(*kmsg.CreateACLsRequest).Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = code
			resp.Results = append(resp.Results, res)
		}
	case *kmsg.DeleteACLsResponse:
		for range req.(*kmsg.DeleteACLsRequest).Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = code
			resp.Results = append(resp.Results, res)
		}
	default:
		return groupErrorResponse(req, code)
	}
	return resp
}

// followACLs keeps the authorizer's bindings those of the metadata image,
// on the log's apply goroutine: a record's changes one by one, in order
// (the authorizer's writes copy only the paths they change, so a log
// replays cheaply), a restored snapshot's bindings whole (rec nil). A
// check running meanwhile sees each change whole, as Kafka's authorizer
// applies its records one by one.
func (s *Server) followACLs(after *metadata.Image, rec *metadata.Record) {
	if rec != nil && len(rec.ACLs) == 0 {
		return
	}
	if s.authz != nil {
		var err error
		if rec == nil {
			err = s.authz.Replace(after.ACLs())
		}
		for i := 0; rec != nil && i < len(rec.ACLs) && err == nil; i++ {
			if c := rec.ACLs[i]; c.Remove {
				_, err = s.authz.Remove(c.Binding.Filter())
			} else {
				_, err = s.authz.Add(c.Binding)
			}
		}
		if err != nil {
			// The log holds only bindings the authorizer accepts
			// (metadata.ACLChange decodes no other): a bug.
			s.log.Error("the authorizer refused a binding of the metadata log", zap.Error(err))
		}
	}
}

// keepSecurity keeps a broker alone's ACL bindings and SCRAM credentials
// in log.dirs (durable.go) after a record that changes them: its
// metadata log is in memory. On the log's apply goroutine.
func (s *Server) keepSecurity(after *metadata.Image, rec *metadata.Record) {
	if rec == nil || (len(rec.ACLs) == 0 && len(rec.Scram) == 0) || !s.member.Alone() || s.durable == nil {
		return
	}
	if err := s.durable.saveSecurity(after); err != nil {
		s.log.Error("the ACL bindings and SCRAM credentials could not be kept in log.dirs: a restart will not have this change", zap.Error(err))
	}
}
