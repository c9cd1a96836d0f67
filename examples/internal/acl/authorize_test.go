package acl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	alice = "User:alice"
	bob   = "User:bob"
)

// request is one check: principal from host asks for op on rt's name.
type request struct {
	principal, host string
	op              kmsg.ACLOperation
	rt              kmsg.ACLResourceType
	name            string
}

func ask(principal string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) request {
	return request{principal, "10.0.0.1", op, rt, name}
}

func (r request) from(host string) request {
	r.host = host
	return r
}

func TestAuthorize(t *testing.T) {
	everyone := WithAllowEveryoneIfNoACLFound(true)
	tests := []struct {
		name     string
		bindings []Binding
		opts     []Option
		req      request
		want     bool
	}{
		// The default when no binding applies to the resource.
		{"no bindings: denied by default", nil, nil, ask(alice, opRead, topic, "t"), false},
		{"no bindings: allow.everyone.if.no.acl.found", nil, []Option{everyone}, ask(alice, opRead, topic, "t"), true},
		{"bindings elsewhere only: the default still",
			[]Binding{bind(topic, literal, "other", bob, opRead, allow)}, []Option{everyone},
			ask(alice, opRead, topic, "t"), true},
		{"a binding for someone else applies to the resource: denied",
			[]Binding{bind(topic, literal, "t", bob, opRead, allow)}, []Option{everyone},
			ask(alice, opRead, topic, "t"), false},
		{"a binding for another operation applies to the resource: denied",
			[]Binding{bind(topic, literal, "t", alice, opWrite, allow)}, []Option{everyone},
			ask(alice, opCreate, topic, "t"), false},
		{"a binding from another host applies to the resource: denied",
			[]Binding{fromHost(bind(topic, literal, "t", alice, opRead, allow), "10.9.9.9")}, []Option{everyone},
			ask(alice, opRead, topic, "t"), false},
		{"a prefixed binding applies to the resource: denied",
			[]Binding{bind(topic, prefixed, "t", bob, opRead, allow)}, []Option{everyone},
			ask(alice, opRead, topic, "tx"), false},
		{"a wildcard binding applies to the resource: denied",
			[]Binding{bind(topic, literal, Wildcard, bob, opRead, allow)}, []Option{everyone},
			ask(alice, opRead, topic, "t"), false},
		{"a binding on another resource type does not apply",
			[]Binding{bind(group, literal, "t", bob, opRead, allow)}, []Option{everyone},
			ask(alice, opRead, topic, "t"), true},

		// Super users.
		{"super user without bindings", nil, []Option{WithSuperUsers("User:admin")},
			ask("User:admin", opAlter, cluster, ClusterName), true},
		{"super user despite DENY ALL",
			[]Binding{bind(topic, literal, Wildcard, WildcardPrincipal, opAll, deny)}, []Option{WithSuperUsers(bob, "User:admin")},
			ask("User:admin", opRead, topic, "t"), true},
		{"super users match exactly", nil, []Option{WithSuperUsers("User:admin")},
			ask("User:Admin", opRead, topic, "t"), false},
		{"super user, even for an unknown operation", nil, []Option{WithSuperUsers("User:admin")},
			ask("User:admin", kmsg.ACLOperationAny, topic, "t"), true},

		// Which bindings apply to a name.
		{"literal, exact name", []Binding{bind(topic, literal, "payments", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "payments"), true},
		{"literal is no prefix", []Binding{bind(topic, literal, "pay", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "payments"), false},
		{"literal is no suffix", []Binding{bind(topic, literal, "payments", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "pay"), false},
		{"literal wildcard, any name", []Binding{bind(topic, literal, Wildcard, alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "anything"), true},
		{"literal wildcard, the name *", []Binding{bind(topic, literal, Wildcard, alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, Wildcard), true},
		{"literal wildcard, an empty name", []Binding{bind(topic, literal, Wildcard, alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, ""), true},
		{"literal *x is no wildcard", []Binding{bind(topic, literal, "*x", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "ax"), false},
		{"prefixed, a longer name", []Binding{bind(topic, prefixed, "pay", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "payments"), true},
		{"prefixed, its own name", []Binding{bind(topic, prefixed, "pay", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "pay"), true},
		{"prefixed, a shorter name", []Binding{bind(topic, prefixed, "pay", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "pa"), false},
		{"prefixed, a sibling name", []Binding{bind(topic, prefixed, "pay", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "pat"), false},
		{"prefixed among many prefixes",
			[]Binding{
				bind(topic, prefixed, "a", bob, opRead, allow),
				bind(topic, prefixed, "pax", bob, opRead, allow),
				bind(topic, prefixed, "pa", alice, opRead, allow),
				bind(topic, literal, "pay", bob, opRead, allow),
				bind(topic, prefixed, "payments-eu", bob, opRead, allow),
			}, nil,
			ask(alice, opRead, topic, "payments"), true},
		{"resource types are apart", []Binding{bind(group, literal, "t", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "t"), false},

		// DENY wins.
		{"deny wins over allow, same pattern",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), bind(topic, literal, "t", alice, opRead, deny)}, nil,
			ask(alice, opRead, topic, "t"), false},
		{"prefixed deny wins over literal allow",
			[]Binding{bind(topic, literal, "payments", alice, opRead, allow), bind(topic, prefixed, "pay", alice, opRead, deny)}, nil,
			ask(alice, opRead, topic, "payments"), false},
		{"literal deny wins over wildcard allow",
			[]Binding{bind(topic, literal, Wildcard, alice, opRead, allow), bind(topic, literal, "t", alice, opRead, deny)}, nil,
			ask(alice, opRead, topic, "t"), false},
		{"wildcard deny wins over literal allow",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), bind(topic, literal, Wildcard, alice, opRead, deny)}, nil,
			ask(alice, opRead, topic, "t"), false},
		{"wildcard principal deny wins over own allow",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), bind(topic, literal, "t", WildcardPrincipal, opRead, deny)}, nil,
			ask(alice, opRead, topic, "t"), false},
		{"a deny for someone else does not deny",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), bind(topic, literal, "t", bob, opRead, deny)}, nil,
			ask(alice, opRead, topic, "t"), true},
		{"a deny from another host does not deny",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), fromHost(bind(topic, literal, "t", alice, opRead, deny), "10.9.9.9")}, nil,
			ask(alice, opRead, topic, "t"), true},
		{"a deny from this host denies",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), fromHost(bind(topic, literal, "t", alice, opRead, deny), "10.0.0.1")}, nil,
			ask(alice, opRead, topic, "t"), false},
		{"a prefixed deny that is no prefix does not deny",
			[]Binding{bind(topic, literal, "payments", alice, opRead, allow), bind(topic, prefixed, "payments-", alice, opRead, deny)}, nil,
			ask(alice, opRead, topic, "payments"), true},

		// Principals.
		{"wildcard principal allows anyone", []Binding{bind(topic, literal, "t", WildcardPrincipal, opRead, allow)}, nil,
			ask(bob, opRead, topic, "t"), true},
		{"wildcard principal allows another type", []Binding{bind(topic, literal, "t", WildcardPrincipal, opRead, allow)}, nil,
			ask("Group:ops", opRead, topic, "t"), true},
		{"Group:* is no wildcard", []Binding{bind(topic, literal, "t", "Group:*", opRead, allow)}, nil,
			ask("Group:ops", opRead, topic, "t"), false},
		{"principals match exactly", []Binding{bind(topic, literal, "t", alice, opRead, allow)}, nil,
			ask("User:Alice", opRead, topic, "t"), false},
		{"the type is part of the principal", []Binding{bind(topic, literal, "t", alice, opRead, allow)}, nil,
			ask("Group:alice", opRead, topic, "t"), false},

		// Hosts.
		{"host, same address", []Binding{fromHost(bind(topic, literal, "t", alice, opRead, allow), "10.0.0.1")}, nil,
			ask(alice, opRead, topic, "t"), true},
		{"host, another address", []Binding{fromHost(bind(topic, literal, "t", alice, opRead, allow), "10.0.0.1")}, nil,
			ask(alice, opRead, topic, "t").from("10.0.0.2"), false},
		{"host, IPv4-mapped IPv6 request", []Binding{fromHost(bind(topic, literal, "t", alice, opRead, allow), "10.0.0.1")}, nil,
			ask(alice, opRead, topic, "t").from("::ffff:10.0.0.1"), true},
		{"host, IPv6 spelled otherwise", []Binding{fromHost(bind(topic, literal, "t", alice, opRead, allow), "0:0:0:0:0:0:0:1")}, nil,
			ask(alice, opRead, topic, "t").from("::1"), true},
		{"host, a request host that is no address", []Binding{fromHost(bind(topic, literal, "t", alice, opRead, allow), "10.0.0.1")}, nil,
			ask(alice, opRead, topic, "t").from("localhost"), false},
		{"wildcard host, any request host", []Binding{bind(topic, literal, "t", alice, opRead, allow)}, nil,
			ask(alice, opRead, topic, "t").from("localhost"), true},

		// Operations an ALLOW implies.
		{"allow READ implies DESCRIBE", []Binding{bind(topic, literal, "t", alice, opRead, allow)}, nil,
			ask(alice, opDescribe, topic, "t"), true},
		{"allow WRITE implies DESCRIBE", []Binding{bind(topic, literal, "t", alice, opWrite, allow)}, nil,
			ask(alice, opDescribe, topic, "t"), true},
		{"allow DELETE implies DESCRIBE", []Binding{bind(topic, literal, "t", alice, opDelete, allow)}, nil,
			ask(alice, opDescribe, topic, "t"), true},
		{"allow ALTER implies DESCRIBE", []Binding{bind(topic, literal, "t", alice, opAlter, allow)}, nil,
			ask(alice, opDescribe, topic, "t"), true},
		{"allow CREATE does not imply DESCRIBE", []Binding{bind(topic, literal, "t", alice, opCreate, allow)}, nil,
			ask(alice, opDescribe, topic, "t"), false},
		{"allow ALTER_CONFIGS implies DESCRIBE_CONFIGS", []Binding{bind(topic, literal, "t", alice, opAlterConfigs, allow)}, nil,
			ask(alice, opDescribeConfigs, topic, "t"), true},
		{"allow ALTER_CONFIGS does not imply DESCRIBE", []Binding{bind(topic, literal, "t", alice, opAlterConfigs, allow)}, nil,
			ask(alice, opDescribe, topic, "t"), false},
		{"allow DESCRIBE does not imply READ", []Binding{bind(topic, literal, "t", alice, opDescribe, allow)}, nil,
			ask(alice, opRead, topic, "t"), false},
		{"allow READ does not imply WRITE", []Binding{bind(topic, literal, "t", alice, opRead, allow)}, nil,
			ask(alice, opWrite, topic, "t"), false},
		{"allow ALL implies everything", []Binding{bind(topic, literal, "t", alice, opAll, allow)}, nil,
			ask(alice, opAlterConfigs, topic, "t"), true},
		{"allow ALL through a prefix", []Binding{bind(group, prefixed, "g", alice, opAll, allow)}, nil,
			ask(alice, opDelete, group, "g1"), true},

		// Operations a DENY covers.
		{"deny READ leaves DESCRIBE to the allow of READ",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), bind(topic, literal, "t", alice, opRead, deny)}, nil,
			ask(alice, opDescribe, topic, "t"), true},
		{"deny DESCRIBE does not deny READ",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), bind(topic, literal, "t", alice, opDescribe, deny)}, nil,
			ask(alice, opRead, topic, "t"), true},
		{"deny DESCRIBE denies DESCRIBE that READ implies",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), bind(topic, literal, "t", alice, opDescribe, deny)}, nil,
			ask(alice, opDescribe, topic, "t"), false},
		{"deny ALL denies what is allowed",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow), bind(topic, prefixed, "t", alice, opAll, deny)}, nil,
			ask(alice, opRead, topic, "t"), false},
		{"deny ALL denies DESCRIBE",
			[]Binding{bind(topic, literal, "t", alice, opAll, allow), bind(topic, literal, "t", alice, opAll, deny)}, nil,
			ask(alice, opDescribe, topic, "t"), false},
		{"deny READ alone: DESCRIBE is denied as the resource has bindings",
			[]Binding{bind(topic, literal, "t", alice, opRead, deny)}, []Option{everyone},
			ask(alice, opDescribe, topic, "t"), false},
		{"deny ALTER_CONFIGS leaves DESCRIBE_CONFIGS",
			[]Binding{bind(topic, literal, "t", alice, opAlterConfigs, allow), bind(topic, literal, "t", alice, opAlterConfigs, deny)}, nil,
			ask(alice, opDescribeConfigs, topic, "t"), true},

		// Other resource types.
		{"cluster", []Binding{bind(cluster, literal, ClusterName, alice, opIdempotentWrite, allow)}, nil,
			ask(alice, opIdempotentWrite, cluster, ClusterName), true},
		{"transactional id by prefix", []Binding{bind(txnID, prefixed, "app-", alice, opWrite, allow)}, nil,
			ask(alice, opWrite, txnID, "app-1"), true},
		{"user", []Binding{bind(user, literal, "bob", alice, kmsg.ACLOperationCreateTokens, allow)}, nil,
			ask(alice, kmsg.ACLOperationCreateTokens, user, "bob"), true},

		// Requests no binding can answer.
		{"operation ANY", []Binding{bind(topic, literal, "t", alice, opAll, allow)}, []Option{everyone},
			ask(alice, kmsg.ACLOperationAny, topic, "t"), false},
		{"operation unknown", nil, []Option{everyone}, ask(alice, kmsg.ACLOperationUnknown, topic, "t"), false},
		{"operation out of range", nil, []Option{everyone}, ask(alice, 100, topic, "t"), false},
		{"resource type ANY", nil, []Option{everyone}, ask(alice, opRead, kmsg.ACLResourceTypeAny, "t"), false},
		{"resource type out of range", nil, []Option{everyone}, ask(alice, opRead, 9, "t"), false},
		{"resource type negative", nil, []Option{everyone}, ask(alice, opRead, -3, "t"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestAuthorizer(t, tt.bindings, tt.opts...)
			r := tt.req
			assert.Equal(t, tt.want, a.Authorize(r.principal, r.host, r.op, r.rt, r.name), "%+v", r)
		})
	}
}

func TestAuthorizedOperations(t *testing.T) {
	everyone := WithAllowEveryoneIfNoACLFound(true)
	tests := []struct {
		name     string
		bindings []Binding
		opts     []Option
		req      request // op unused
		want     OperationSet
	}{
		{"no bindings", nil, nil, ask(alice, 0, topic, "t"), 0},
		{"no bindings, allow everyone: what the type supports", nil, []Option{everyone}, ask(alice, 0, group, "g"), Supported(group)},
		{"super user: what the type supports", nil, []Option{WithSuperUsers(alice)}, ask(alice, 0, cluster, ClusterName), Supported(cluster)},
		{"allow READ: READ and DESCRIBE",
			[]Binding{bind(topic, literal, "t", alice, opRead, allow)}, nil,
			ask(alice, 0, topic, "t"), Operations(opRead, opDescribe)},
		{"allow ALL less a deny of DESCRIBE",
			[]Binding{bind(topic, prefixed, "t", alice, opAll, allow), bind(topic, literal, Wildcard, WildcardPrincipal, opDescribe, deny)}, nil,
			ask(alice, 0, topic, "t"), Supported(topic) &^ Operations(opDescribe)},
		{"allow ALL on a group: only what a group supports",
			[]Binding{bind(group, literal, "g", alice, opAll, allow)}, nil,
			ask(alice, 0, group, "g"), Supported(group)},
		{"bindings for someone else", []Binding{bind(topic, literal, "t", bob, opRead, allow)}, []Option{everyone},
			ask(alice, 0, topic, "t"), 0},
		{"an operation the type does not support is left out",
			[]Binding{bind(topic, literal, "t", alice, opClusterAction, allow), bind(topic, literal, "t", alice, opWrite, allow)}, nil,
			ask(alice, 0, topic, "t"), Operations(opWrite, opDescribe)},
		{"resource type ANY", nil, []Option{WithSuperUsers(alice)}, ask(alice, 0, kmsg.ACLResourceTypeAny, "t"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestAuthorizer(t, tt.bindings, tt.opts...)
			r := tt.req
			got := a.AuthorizedOperations(r.principal, r.host, r.rt, r.name)
			assert.Equal(t, tt.want.List(), got.List())
			for _, op := range Supported(r.rt).List() {
				assert.Equal(t, a.Authorize(r.principal, r.host, op, r.rt, r.name), got.Contains(op),
					"AuthorizedOperations agrees with Authorize on %s", op)
			}
		})
	}
}

func TestOperationSet(t *testing.T) {
	s := Operations(opRead, opDescribe, opClusterAction)
	assert.Equal(t, []kmsg.ACLOperation{opRead, opDescribe, opClusterAction}, s.List())
	assert.True(t, s.Contains(opRead))
	assert.False(t, s.Contains(opWrite))
	assert.False(t, s.Contains(-1), "out of range is never in a set")
	assert.False(t, s.Contains(40))
	assert.Equal(t, int32(1<<3|1<<8), s.Bitfield(topic), "bit i for code i; CLUSTER_ACTION is no topic operation")
	assert.Equal(t, int32(1<<8|1<<9), s.Bitfield(cluster))
	assert.Equal(t, int32(0), s.Bitfield(kmsg.ACLResourceTypeAny))
	assert.Empty(t, OperationSet(0).List())
	// Kafka's authorized operations of a topic for a super user, as a
	// Kafka 4 broker answers Metadata with.
	assert.Equal(t, int32(3576), Supported(topic).Bitfield(topic))
}

// TestAuthorizeAny follows Kafka's AuthorizerInterfaceDefaultTest and
// BaseAuthorizerTest (testAuthorizeByResourceType...).
func TestAuthorizeAny(t *testing.T) {
	everyone := WithAllowEveryoneIfNoACLFound(true)
	w := func(pt kmsg.ACLResourcePatternType, name string, perm kmsg.ACLPermissionType) Binding {
		return bind(topic, pt, name, alice, opWrite, perm)
	}
	tests := []struct {
		name     string
		bindings []Binding
		opts     []Option
		req      request // name unused
		want     bool
	}{
		{"no bindings", nil, nil, ask(alice, opWrite, topic, ""), false},
		{"no bindings, allow everyone", nil, []Option{everyone}, ask(alice, opWrite, topic, ""), true},
		{"allow everyone, and bindings that apply to 'hardcode'",
			[]Binding{bind(topic, prefixed, "hard", bob, opRead, allow)}, []Option{everyone},
			ask(alice, opWrite, topic, ""), false},
		{"super user, despite a wildcard deny", []Binding{w(literal, Wildcard, deny)}, []Option{WithSuperUsers(alice)},
			ask(alice, opWrite, topic, ""), true},
		{"a literal allow", []Binding{w(literal, "a", allow)}, nil, ask(alice, opWrite, topic, ""), true},
		{"a prefixed allow", []Binding{w(prefixed, "a", allow)}, nil, ask(alice, opWrite, topic, ""), true},
		{"a wildcard allow", []Binding{w(literal, Wildcard, allow)}, nil, ask(alice, opWrite, topic, ""), true},
		{"literal allow, literal deny of it", []Binding{w(literal, "a", allow), w(literal, "a", deny)}, nil,
			ask(alice, opWrite, topic, ""), false},
		{"literal allow, prefixed deny of it", []Binding{w(literal, "ab", allow), w(prefixed, "a", deny)}, nil,
			ask(alice, opWrite, topic, ""), false},
		{"literal allow, prefixed deny of its own name", []Binding{w(literal, "ab", allow), w(prefixed, "ab", deny)}, nil,
			ask(alice, opWrite, topic, ""), false},
		{"literal allow, literal deny of a prefix", []Binding{w(literal, "ab", allow), w(literal, "a", deny)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"literal allow, longer prefixed deny", []Binding{w(literal, "a", allow), w(prefixed, "ab", deny)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"prefixed allow, shorter prefixed deny", []Binding{w(prefixed, "ab", allow), w(prefixed, "a", deny)}, nil,
			ask(alice, opWrite, topic, ""), false},
		{"prefixed allow, longer prefixed deny", []Binding{w(prefixed, "a", allow), w(prefixed, "ab", deny)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"prefixed allow, literal deny of its name", []Binding{w(prefixed, "a", allow), w(literal, "a", deny)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"prefixed deny on another branch", []Binding{w(literal, "ba", allow), w(prefixed, "a", deny)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"one dominated allow, one not", []Binding{w(literal, "ab", allow), w(prefixed, "a", deny), w(prefixed, "b", allow)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"allows deep under a prefixed deny",
			[]Binding{w(prefixed, "a", deny), w(literal, "abc", allow), w(prefixed, "abd", allow), w(literal, "ab", allow)}, nil,
			ask(alice, opWrite, topic, ""), false},
		{"wildcard deny beats a literal allow", []Binding{w(literal, "a", allow), w(literal, Wildcard, deny)}, nil,
			ask(alice, opWrite, topic, ""), false},
		{"wildcard deny beats a wildcard allow", []Binding{w(literal, Wildcard, allow), w(literal, Wildcard, deny)}, nil,
			ask(alice, opWrite, topic, ""), false},
		{"wildcard allow beats a prefixed deny", []Binding{w(literal, Wildcard, allow), w(prefixed, "a", deny)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"ALL allows", []Binding{bind(topic, literal, "a", alice, opAll, allow)}, nil, ask(alice, opWrite, topic, ""), true},
		{"ALL denies", []Binding{w(literal, "a", allow), bind(topic, prefixed, "a", alice, opAll, deny)}, nil,
			ask(alice, opWrite, topic, ""), false},
		{"another operation", []Binding{bind(topic, literal, "a", alice, opRead, allow)}, nil, ask(alice, opWrite, topic, ""), false},
		{"no implied operations", []Binding{w(literal, "a", allow)}, nil, ask(alice, opDescribe, topic, ""), false},
		{"another principal", []Binding{bind(topic, literal, "a", bob, opWrite, allow)}, nil, ask(alice, opWrite, topic, ""), false},
		{"the wildcard principal", []Binding{bind(topic, literal, "a", WildcardPrincipal, opWrite, allow)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"another principal's deny", []Binding{w(literal, "a", allow), bind(topic, prefixed, "a", bob, opWrite, deny)}, nil,
			ask(alice, opWrite, topic, ""), true},
		{"another host", []Binding{fromHost(w(literal, "a", allow), "10.9.9.9")}, nil, ask(alice, opWrite, topic, ""), false},
		{"this host", []Binding{fromHost(w(literal, "a", allow), "10.0.0.1")}, nil, ask(alice, opWrite, topic, ""), true},
		{"another resource type", []Binding{bind(group, literal, "a", alice, opWrite, allow)}, nil, ask(alice, opWrite, topic, ""), false},
		{"operation ANY", []Binding{w(literal, Wildcard, allow)}, []Option{everyone}, ask(alice, kmsg.ACLOperationAny, topic, ""), false},
		{"resource type ANY", nil, []Option{everyone, WithSuperUsers(alice)}, ask(alice, opWrite, kmsg.ACLResourceTypeAny, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestAuthorizer(t, tt.bindings, tt.opts...)
			r := tt.req
			assert.Equal(t, tt.want, a.AuthorizeAny(r.principal, r.host, r.op, r.rt), "%+v", r)
		})
	}
}

func TestNewRefusesBadSuperUsers(t *testing.T) {
	_, err := New(WithSuperUsers("User:admin", "admin"))
	assert.ErrorIs(t, err, ErrInvalidOption)
}
