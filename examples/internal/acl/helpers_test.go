package acl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// newTestAuthorizer returns an Authorizer configured by opts that holds
// bindings.
func newTestAuthorizer(t testing.TB, bindings []Binding, opts ...Option) *Authorizer {
	t.Helper()
	a, err := New(opts...)
	require.NoError(t, err)
	_, err = a.Add(bindings...)
	require.NoError(t, err)
	return a
}
