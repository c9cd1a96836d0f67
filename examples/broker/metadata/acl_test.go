package metadata

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

func binding(name string, pattern kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: pattern,
		Principal: principal, Host: acl.Wildcard, Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// TestACLs: bindings are added and removed by records, in order, survive
// a snapshot and a log entry, and an image never sees a later record's
// change.
func TestACLs(t *testing.T) {
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	readOrders := binding("orders", lit, "User:alice", kmsg.ACLOperationRead)
	writePay := binding("pay", pre, "User:bob", kmsg.ACLOperationWrite)
	readAll := binding(acl.Wildcard, lit, "User:carol", kmsg.ACLOperationRead)

	im0 := Empty()
	im1 := im0.Apply(1, &Record{ACLs: []ACLChange{{Binding: writePay}, {Binding: readOrders}, {Binding: readOrders}}})
	assert.Equal(t, []acl.Binding{readOrders, writePay}, im1.ACLs(), "each once, in Describe's order")
	assert.Zero(t, im0.ACLCount(), "the image before is unchanged")

	im2 := im1.Apply(2, &Record{Partitions: []PartitionChange{{Index: 0}}})
	assert.Equal(t, im1.ACLs(), im2.ACLs(), "a record without bindings keeps them")

	im3 := im2.Apply(3, &Record{ACLs: []ACLChange{{Binding: readAll}, {Binding: readOrders, Remove: true},
		{Binding: binding("nope", lit, "User:x", kmsg.ACLOperationRead), Remove: true}}})
	assert.Equal(t, []acl.Binding{readAll, writePay}, im3.ACLs())
	assert.True(t, im2.HasACL(readOrders), "still in the image before")
	assert.False(t, im3.HasACL(readOrders))

	name := "payments"
	f := acl.Any()
	f.ResourceType, f.PatternType, f.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, &name
	assert.Equal(t, []acl.Binding{readAll, writePay}, im3.MatchingACLs(f), "MATCH: the wildcard and the prefix")

	b, err := MarshalImage(im3)
	require.NoError(t, err)
	back, err := UnmarshalImage(b)
	require.NoError(t, err)
	assert.Equal(t, im3.ACLs(), back.ACLs(), "through a snapshot")

	rec, err := DecodeRecord((&Record{ACLs: []ACLChange{{Binding: writePay, Remove: true}}}).Encode())
	require.NoError(t, err)
	assert.False(t, rec.Empty())
	assert.Equal(t, []acl.Binding{readAll}, back.Apply(4, rec).ACLs(), "through a log entry")
}

// TestACLChangeRefusesInvalidBindings: a log entry never holds a binding
// the authorizer would refuse, either way.
func TestACLChangeRefusesInvalidBindings(t *testing.T) {
	bad := binding("", kmsg.ACLResourcePatternTypeLiteral, "User:alice", kmsg.ACLOperationRead)
	_, err := json.Marshal(ACLChange{Binding: bad})
	assert.ErrorIs(t, err, acl.ErrInvalidBinding)

	_, err = DecodeRecord([]byte(`{"acls":[{"binding":"AQIDAwM="}]}`))
	assert.ErrorIs(t, err, acl.ErrCorruptRecord)
}
