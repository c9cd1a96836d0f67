package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

func topicBinding(name, principal string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name,
		PatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: principal, Host: acl.Wildcard,
		Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// TestCreateAndDeleteACLs: creations are validated one by one and
// committed once each; a deletion removes what its filter selects in the
// image, each binding once, and an invalid filter removes nothing.
func TestCreateAndDeleteACLs(t *testing.T) {
	c, log, _ := newActive(t)
	ctx := context.Background()
	read := topicBinding("orders", "User:alice", kmsg.ACLOperationRead)
	write := topicBinding("orders", "User:bob", kmsg.ACLOperationWrite)
	other := topicBinding("payments", "User:alice", kmsg.ACLOperationRead)
	bad := topicBinding("", "User:alice", kmsg.ACLOperationRead)

	errs, err := c.CreateACLs(ctx, []acl.Binding{read, bad, write, read})
	require.NoError(t, err)
	require.Len(t, errs, 4)
	assert.NoError(t, errs[0])
	assert.ErrorIs(t, errs[1], acl.ErrInvalidBinding)
	assert.NoError(t, errs[2])
	assert.NoError(t, errs[3], "twice in one request: both succeed")
	assert.Equal(t, []acl.Binding{read, write}, log.Image().ACLs())

	index := log.Image().Index
	errs, err = c.CreateACLs(ctx, []acl.Binding{read})
	require.NoError(t, err)
	assert.NoError(t, errs[0], "held already: success")
	assert.Equal(t, index, log.Image().Index, "and nothing committed")

	_, err = c.CreateACLs(ctx, []acl.Binding{other})
	require.NoError(t, err)

	orders, alice := "orders", "User:alice"
	byName, byPrincipal, invalid := acl.Any(), acl.Any(), acl.Any()
	byName.ResourceName = &orders
	byPrincipal.Principal = &alice
	invalid.Operation = kmsg.ACLOperationUnknown
	dels, err := c.DeleteACLs(ctx, []acl.Filter{byName, invalid, byPrincipal})
	require.NoError(t, err)
	require.Len(t, dels, 3)
	assert.Equal(t, []acl.Binding{read, write}, dels[0].Bindings)
	assert.ErrorIs(t, dels[1].Err, acl.ErrInvalidFilter)
	assert.Empty(t, dels[1].Bindings)
	assert.Equal(t, []acl.Binding{read, other}, dels[2].Bindings, "a binding two filters select is in both")
	assert.Zero(t, log.Image().ACLCount())

	c.LeaderChanged(2, false)
	_, err = c.CreateACLs(ctx, []acl.Binding{read})
	assert.ErrorIs(t, err, ErrNotController)
	_, err = c.DeleteACLs(ctx, []acl.Filter{acl.Any()})
	assert.ErrorIs(t, err, ErrNotController)
}
