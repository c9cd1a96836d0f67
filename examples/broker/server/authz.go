package server

// Authorization, as Kafka's KafkaApis and AuthHelper check each request
// against its authorizer (package acl, Kafka's StandardAuthorizer), when
// authorizer.class.name turns one on. Without one every check below is
// free and allows: the handlers answer as they always have.
//
// # The checks
//
// Every API is checked as package authz's table says, with Kafka's
// operation on Kafka's resource, and a denial answered with Kafka's code
// where Kafka puts it. A check on the whole request (authz.Gate) runs
// before the handler, and before any routing (NOT_COORDINATOR,
// NOT_CONTROLLER), as Kafka checks before asking its coordinators; the
// others run in the handlers, per topic, group or transactional id.
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
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
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

// access is a request's client as the authorizer sees it (package
// authz): the zero value, what a broker without an authorizer hands out,
// allows everything at no cost.
type access = authz.Access

// access returns r's client as the authorizer sees it.
func (s *Server) access(r *kafkanet.Request) access {
	if s.authz == nil {
		return access{}
	}
	return authz.For(s.authz, r)
}

// gate answers r at once, and reports so, when its principal may not make
// it at all (authz.Gate); free without an authorizer. A refused acks=0
// produce closes the connection, as Kafka signals its failures.
func (s *Server) gate(r *kafkanet.Request) bool {
	code := authz.Gate(s.access(r), r.Msg)
	if code == 0 {
		return false
	}
	if p, ok := r.Msg.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		r.HangUp()
		return true
	}
	r.Respond(authz.ErrorResponse(r.Msg, code))
	return true
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

// keepSecurity keeps a broker alone's ACL bindings, SCRAM credentials and
// client quotas in log.dirs (durable.go) after a record that changes
// them: its metadata log is in memory. On the log's apply goroutine.
func (s *Server) keepSecurity(after *metadata.Image, rec *metadata.Record) {
	if rec == nil || (len(rec.ACLs) == 0 && len(rec.Scram) == 0 && len(rec.Quotas) == 0 && len(rec.Configs) == 0) ||
		!s.member.Alone() || s.durable == nil {
		return
	}
	if err := s.durable.saveSecurity(after); err != nil {
		s.log.Error("the ACL bindings, SCRAM credentials, client quotas and broker and group configs could not be kept in log.dirs: "+
			"a restart will not have this change", zap.Error(err))
	}
}
