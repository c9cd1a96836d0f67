package acl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Short names for the enums, used across the tests.
const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	txnID   = kmsg.ACLResourceTypeTransactionalId
	token   = kmsg.ACLResourceTypeDelegationToken
	user    = kmsg.ACLResourceTypeUser

	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed
	match    = kmsg.ACLResourcePatternTypeMatch

	opAll             = kmsg.ACLOperationAll
	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opClusterAction   = kmsg.ACLOperationClusterAction
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite

	allow = kmsg.ACLPermissionTypeAllow
	deny  = kmsg.ACLPermissionTypeDeny
)

// bind returns a valid binding: the ACL "perm principal op on rt:pt:name
// from any host".
func bind(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, principal string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: Wildcard, Operation: op, Permission: perm}
}

// fromHost returns b for host only.
func fromHost(b Binding, host string) Binding {
	b.Host = host
	return b
}

func TestBindingValidate(t *testing.T) {
	ok := bind(topic, literal, "orders", "User:alice", opRead, allow)
	with := func(f func(*Binding)) Binding {
		b := ok
		f(&b)
		return b
	}
	tests := []struct {
		name  string
		b     Binding
		valid bool
	}{
		{"literal", ok, true},
		{"prefixed", with(func(b *Binding) { b.PatternType = prefixed }), true},
		{"wildcard literal", with(func(b *Binding) { b.ResourceName = Wildcard }), true},
		{"deny all", with(func(b *Binding) { b.Operation, b.Permission = opAll, deny }), true},
		{"every concrete type", with(func(b *Binding) { b.ResourceType = user }), true},
		{"cluster", bind(cluster, literal, ClusterName, "User:alice", opAlter, allow), true},
		{"ipv4 host", with(func(b *Binding) { b.Host = "10.1.2.3" }), true},
		{"ipv6 host", with(func(b *Binding) { b.Host = "0:0:0:0:0:0:0:1" }), true},
		{"principal of another type", with(func(b *Binding) { b.Principal = "Group:ops" }), true},
		{"principal with a colon in its name", with(func(b *Binding) { b.Principal = "User:CN=a:b" }), true},
		{"wildcard principal", with(func(b *Binding) { b.Principal = WildcardPrincipal }), true},
		{"operation not supported by the type, as Kafka", with(func(b *Binding) { b.Operation = opClusterAction }), true},

		{"resource type unknown", with(func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeUnknown }), false},
		{"resource type any", with(func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny }), false},
		{"resource type past the last", with(func(b *Binding) { b.ResourceType = 8 }), false},
		{"resource type negative", with(func(b *Binding) { b.ResourceType = -1 }), false},
		{"pattern type any", with(func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeAny }), false},
		{"pattern type match", with(func(b *Binding) { b.PatternType = match }), false},
		{"pattern type unknown", with(func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeUnknown }), false},
		{"operation any", with(func(b *Binding) { b.Operation = kmsg.ACLOperationAny }), false},
		{"operation unknown", with(func(b *Binding) { b.Operation = kmsg.ACLOperationUnknown }), false},
		{"operation past the last", with(func(b *Binding) { b.Operation = 15 }), false},
		{"permission any", with(func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny }), false},
		{"permission unknown", with(func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeUnknown }), false},
		{"permission past the last", with(func(b *Binding) { b.Permission = 4 }), false},
		{"empty name", with(func(b *Binding) { b.ResourceName = "" }), false},
		{"prefixed wildcard", with(func(b *Binding) { b.ResourceName, b.PatternType = Wildcard, prefixed }), false},
		{"cluster of another name", bind(cluster, literal, "other", "User:alice", opAlter, allow), false},
		{"cluster wildcard", bind(cluster, literal, Wildcard, "User:alice", opAlter, allow), false},
		{"principal without a colon", with(func(b *Binding) { b.Principal = "alice" }), false},
		{"principal without a type", with(func(b *Binding) { b.Principal = ":alice" }), false},
		{"principal without a name", with(func(b *Binding) { b.Principal = "User:" }), false},
		{"empty principal", with(func(b *Binding) { b.Principal = "" }), false},
		{"host name", with(func(b *Binding) { b.Host = "broker.example.com" }), false},
		{"empty host", with(func(b *Binding) { b.Host = "" }), false},
		{"cidr host", with(func(b *Binding) { b.Host = "10.0.0.0/8" }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if tt.valid {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidBinding)
			assert.ErrorIs(t, err, kerr.InvalidRequest, "the handler answers INVALID_REQUEST")
			assert.Equal(t, kerr.InvalidRequest.Code, Code(err))
		})
	}
}

func TestValidateMessages(t *testing.T) {
	b := bind(cluster, literal, "c", "User:alice", opAlter, allow)
	assert.EqualError(t, b.Validate(), "acl: invalid binding: the only valid name for the CLUSTER resource is kafka-cluster")
	b = bind(topic, literal, "t", "User:alice", 15, allow)
	assert.EqualError(t, b.Validate(), "acl: invalid binding: invalid operation UNKNOWN (15)")
}

func TestCode(t *testing.T) {
	assert.Equal(t, int16(0), Code(nil))
	assert.Equal(t, kerr.UnknownServerError.Code, Code(ErrCorruptRecord))
	assert.Equal(t, kerr.InvalidRequest.Code, Code(Filter{}.Validate()))
}

func TestBindingString(t *testing.T) {
	b := bind(topic, prefixed, "pay", "User:alice", opRead, deny)
	assert.Equal(t, "(pattern=ResourcePattern(resourceType=TOPIC, name=pay, patternType=PREFIXED), "+
		"entry=(principal=User:alice, host=*, operation=READ, permissionType=DENY))", b.String(),
		"Kafka's AclBinding.toString, for logs that read alike")
}
