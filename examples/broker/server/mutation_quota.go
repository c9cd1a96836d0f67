package server

// The controller mutation quota: controller_mutation_rate (KIP-599,
// Kafka's ControllerMutationQuotaManager, package quota's Mutations)
// bounds the partitions a client creates and deletes per second, per user
// and client id with Kafka's precedence: a topic created counts its
// partitions, a CreatePartitions the partitions it adds, a DeleteTopics
// the partitions it deletes. Each topic is charged once it has passed the
// checks that would refuse it (validate_only too, as Kafka's controller
// charges it), before it is done.
//
// The versions that know THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+,
// CreatePartitions v3+, DeleteTopics v5+) are strict: once the client
// owes, each further topic of the request is answered
// THROTTLING_QUOTA_EXCEEDED and not done, and the answer's
// throttle_time_ms says how long the debt takes to pay. Older ones are
// permissive: every topic is done and charged, and a debt throttles the
// answer. The connection is muted for the throttle as for the other
// quotas (kafkanet's Throttle, KIP-219), and throttle_time_ms is the
// larger of this throttle and the request quota's (request_quota.go).
//
// # Where it is charged
//
// On the broker the client talks to, which knows the client's principal
// and client id. Kafka charges it on the controller, which learns them
// from the Envelope its brokers wrap a forwarded request in; this broker
// has no Envelope: a forwarded request reaches the controller as its
// peer's, under the peer's principal and client id. CreateTopics and
// DeleteTopics are served by the active controller alone (clients send
// them to the controller Metadata names, and others answer
// NOT_CONTROLLER), so there, the two places are the same. CreatePartitions
// is forwarded: the broker the client sent it to charges the partitions
// each topic would add by its image, answers the topics refused
// THROTTLING_QUOTA_EXCEEDED itself, forwards the rest, and gives back
// what it charged for a topic the controller then refused; the
// controller charges nothing for a request forwarded by a peer
// (forwarded), so the quota is charged once. The cost of this simplicity:
// a client that sends CreatePartitions to several brokers that are not
// the controller has a bucket on each, where Kafka's controller keeps
// one, and a bucket lives on its broker alone, so a new active controller
// starts every client full, as Kafka's does. Topics a Metadata request
// auto-creates are not charged: the broker asks the controller for them
// as itself (cluster.Member.CreateAtController), where Kafka's broker
// forwards them under the client's principal.

import (
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// The first versions that know THROTTLING_QUOTA_EXCEEDED, from which the
// quota is strict (Kafka's strictSinceVersion).
const (
	strictCreateTopics     = 6
	strictCreatePartitions = 3
	strictDeleteTopics     = 5
)

// errThrottlingQuota is a topic refused because its client is over its
// controller_mutation_rate (THROTTLING_QUOTA_EXCEEDED, Kafka's message).
var errThrottlingQuota = errors.New("The throttling quota has been exceeded.") // Kafka's message, as clients show it

// mutationQuota returns r's controller mutation quota, strict from
// version strictSince on; nil (take everything, never throttle) when no
// controller_mutation_rate applies to its client, or r was forwarded by a
// peer, which charged it already. Costs the quota's lookup.
func (s *Server) mutationQuota(r *kafkanet.Request, strictSince int16) *quota.Mutations {
	if s.forwarded(r) {
		return nil
	}
	q, ok := s.quotas.mutation.Quota(s.image(), quotaUser(r.Principal()), r.ClientID)
	if !ok {
		return nil
	}
	return s.quotas.mutation.Mutations(q, r.Msg.GetVersion() >= strictSince)
}

// forwarded reports whether r is a peer's, forwarding a client's request
// to this controller: its client id is a broker's (cluster.FromPeer),
// and its principal may CLUSTER_ACTION on the cluster, as Kafka's
// controller requires of an Envelope's sender. Without an authorizer
// every principal may, and a client that calls itself a broker escapes
// the quota, as it could lift the quota itself with AlterClientQuotas.
func (s *Server) forwarded(r *kafkanet.Request) bool {
	return cluster.FromPeer(r.ClientID) && s.access(r).Sees(opClusterAction, clusterRes, acl.ClusterName)
}

// throttleMutations gives resp, r's answer, mq's throttle: its
// throttle_time_ms becomes the throttle if larger, and r's connection is
// muted for it (a request quota's throttle, set later by the request's
// OnAnswer, mutes on its own; the longer mute prevails). Call it once,
// as r is answered.
func throttleMutations(r *kafkanet.Request, mq *quota.Mutations, resp kmsg.Response) {
	d := min(mq.Answer(), math.MaxInt32*time.Millisecond) // uncapped, as Kafka's, but within throttle_time_ms
	if d <= 0 {
		return
	}
	if tr, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	}); ok {
		if ms, _ := tr.Throttle(); throttleMillis(d) > ms {
			tr.SetThrottle(throttleMillis(d))
		}
	}
	r.Throttle(d)
}
