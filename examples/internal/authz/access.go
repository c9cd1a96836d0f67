package authz

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// RefuseUnauthorized is the reason a denied check is counted under in
// the network layer's refusals (broker_refusals_total,
// proxy_refusals_total).
const RefuseUnauthorized = "unauthorized"

// Access is a request's client as the authorizer sees it, read once per
// request. Its zero value, what a server without an authorizer hands
// out, allows everything at no cost.
type Access struct {
	a         *acl.Authorizer // nil: no authorizer
	r         *kafkanet.Request
	principal string
	host      string // the client's IP address
}

// For returns r's client as a checks; the zero Access when a is nil.
func For(a *acl.Authorizer, r *kafkanet.Request) Access {
	if a == nil {
		return Access{}
	}
	return Access{a: a, r: r, principal: r.Principal(), host: ClientIP(r.RemoteAddr())}
}

// ForPrincipal returns principal, connecting from host, as a checks, for
// a check made outside any request (a test, a tool): its denials are
// neither counted nor logged.
func ForPrincipal(a *acl.Authorizer, principal, host string) Access {
	if a == nil {
		return Access{}
	}
	return Access{a: a, principal: principal, host: host}
}

// Allows reports whether the client may do op on the resource, and
// counts and logs a denial (at most once a minute per client host), as
// Kafka's authorizer logs the requests it denies. Free without an
// authorizer; with one, a check that allows takes no lock and allocates
// nothing (package acl).
func (c Access) Allows(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if c.a == nil || c.a.Authorize(c.principal, c.host, op, rt, name) {
		return true
	}
	if c.r != nil {
		c.r.Refuse(RefuseUnauthorized, zap.String("principal", c.principal), zap.String("api", kmsg.NameForKey(c.r.Msg.Key())),
			zap.Stringer("operation", op), zap.Stringer("resource_type", rt), zap.String("resource", name))
	}
	return false
}

// Sees is Allows without the log: for the checks whose denial is no
// refusal but a filter (the topics of a Metadata for all, the groups
// ListGroups lists) or a first try before another (CREATE on the
// cluster before CREATE on the topic), as Kafka passes logIfDenied=false.
func (c Access) Sees(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return c.a == nil || c.a.Authorize(c.principal, c.host, op, rt, name)
}

// SeesAny reports whether the client may do op on some resource of type
// rt (Kafka's authorizeByResourceType), for a request that names none.
func (c Access) SeesAny(op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	return c.a == nil || c.a.AuthorizeAny(c.principal, c.host, op, rt)
}

// On reports whether an authorizer checks this client.
func (c Access) On() bool { return c.a != nil }

// Operations returns KIP-430's authorized_operations for the resource:
// the bitfield of the operations acl.Supported lists for rt that the
// client may do; without an authorizer, all of them, as Kafka's
// AuthHelper.authorizedOperations answers.
func (c Access) Operations(rt kmsg.ACLResourceType, name string) int32 {
	if c.a == nil {
		return acl.Supported(rt).Bitfield(rt)
	}
	return c.a.AuthorizedOperations(c.principal, c.host, rt, name).Bitfield(rt)
}

// TopicCode is the error code of a topic the client may not op: 0 when
// allowed, TOPIC_AUTHORIZATION_FAILED otherwise.
func (c Access) TopicCode(op kmsg.ACLOperation, topic string) int16 {
	if c.Allows(op, kmsg.ACLResourceTypeTopic, topic) {
		return 0
	}
	return kerr.TopicAuthorizationFailed.Code
}

// GroupCode is GROUP_AUTHORIZATION_FAILED unless the client may op on
// group.
func (c Access) GroupCode(op kmsg.ACLOperation, group string) int16 {
	if c.Allows(op, kmsg.ACLResourceTypeGroup, group) {
		return 0
	}
	return kerr.GroupAuthorizationFailed.Code
}

// TxnCode is TRANSACTIONAL_ID_AUTHORIZATION_FAILED unless the client may
// WRITE the transactional id.
func (c Access) TxnCode(id string) int16 {
	if c.Allows(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, id) {
		return 0
	}
	return kerr.TransactionalIDAuthorizationFailed.Code
}

// ClusterCode is CLUSTER_AUTHORIZATION_FAILED unless the client may op on
// the cluster.
func (c Access) ClusterCode(op kmsg.ACLOperation) int16 {
	if c.Allows(op, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		return 0
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// ClientIP returns the IP address of a client's address, as the bindings'
// hosts name it.
func ClientIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}
