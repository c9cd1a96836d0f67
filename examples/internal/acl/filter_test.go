package acl

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func ptr(s string) *string { return &s }

func TestFilterValidate(t *testing.T) {
	with := func(f func(*Filter)) Filter {
		x := Any()
		f(&x)
		return x
	}
	tests := []struct {
		name  string
		f     Filter
		valid bool
	}{
		{"any", Any(), true},
		{"match", with(func(f *Filter) { f.PatternType = match }), true},
		{"concrete", bind(topic, literal, "t", "User:a", opRead, allow).Filter(), true},
		{"names and hosts are not checked", with(func(f *Filter) { f.ResourceName, f.Host, f.Principal = ptr(""), ptr("h"), ptr("p") }), true},
		{"zero", Filter{}, false},
		{"resource type unknown", with(func(f *Filter) { f.ResourceType = kmsg.ACLResourceTypeUnknown }), false},
		{"resource type past the last", with(func(f *Filter) { f.ResourceType = 8 }), false},
		{"pattern type unknown", with(func(f *Filter) { f.PatternType = kmsg.ACLResourcePatternTypeUnknown }), false},
		{"pattern type past the last", with(func(f *Filter) { f.PatternType = 5 }), false},
		{"operation unknown", with(func(f *Filter) { f.Operation = kmsg.ACLOperationUnknown }), false},
		{"operation past the last", with(func(f *Filter) { f.Operation = 15 }), false},
		{"permission unknown", with(func(f *Filter) { f.Permission = kmsg.ACLPermissionTypeUnknown }), false},
		{"permission past the last", with(func(f *Filter) { f.Permission = 4 }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Validate()
			if tt.valid {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalidFilter)
			assert.ErrorIs(t, err, kerr.InvalidRequest)
		})
	}
}

// TestFilterMatches follows Kafka's ResourcePatternFilterTest and
// AccessControlEntryFilterTest.
func TestFilterMatches(t *testing.T) {
	lit := bind(topic, literal, "payments", "User:alice", opRead, allow)
	pre := bind(topic, prefixed, "pay", "User:alice", opRead, allow)
	wild := bind(topic, literal, Wildcard, "User:alice", opRead, allow)
	other := bind(group, literal, "payments", "User:alice", opRead, allow)
	hosted := fromHost(lit, "10.0.0.1")
	wildPrincipal := bind(topic, literal, "payments", WildcardPrincipal, opRead, allow)
	denied := bind(topic, literal, "payments", "User:alice", opRead, deny)
	all := bind(topic, literal, "payments", "User:alice", opAll, allow)

	filter := func(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name *string) Filter {
		f := Any()
		f.ResourceType, f.PatternType, f.ResourceName = rt, pt, name
		return f
	}
	entry := func(principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Filter {
		f := Any()
		f.Principal, f.Host, f.Operation, f.Permission = principal, host, op, perm
		return f
	}
	anyType, anyPattern := kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	anyOp, anyPerm := kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny

	tests := []struct {
		name string
		f    Filter
		b    Binding
		want bool
	}{
		{"any selects all", Any(), pre, true},
		{"type selects its own", filter(topic, anyPattern, nil), lit, true},
		{"type leaves others", filter(topic, anyPattern, nil), other, false},
		{"literal without a name selects literals", filter(topic, literal, nil), wild, true},
		{"literal leaves prefixed", filter(topic, literal, nil), pre, false},
		{"prefixed selects prefixed", filter(topic, prefixed, nil), pre, true},
		{"literal name is exact", filter(topic, literal, ptr("payments")), lit, true},
		{"literal name leaves the wildcard", filter(topic, literal, ptr("payments")), wild, false},
		{"literal wildcard name selects the wildcard", filter(topic, literal, ptr(Wildcard)), wild, true},
		{"prefixed name is exact, not a prefix test", filter(topic, prefixed, ptr("payments")), pre, false},
		{"prefixed name selects its own", filter(topic, prefixed, ptr("pay")), pre, true},
		{"any pattern name is exact: literal", filter(topic, anyPattern, ptr("pay")), pre, true},
		{"any pattern name is exact: not a prefix", filter(topic, anyPattern, ptr("payments")), pre, false},
		{"any pattern name is exact: no wildcard", filter(topic, anyPattern, ptr("payments")), wild, false},
		{"match selects the literal", filter(topic, match, ptr("payments")), lit, true},
		{"match selects the wildcard", filter(topic, match, ptr("payments")), wild, true},
		{"match selects a prefix", filter(topic, match, ptr("payments")), pre, true},
		{"match selects a prefix equal to the name", filter(topic, match, ptr("pay")), pre, true},
		{"match leaves a longer prefix", filter(topic, match, ptr("pa")), pre, false},
		{"match leaves another literal", filter(topic, match, ptr("payment")), lit, false},
		{"match leaves another type", filter(topic, match, ptr("payments")), other, false},
		{"match with any type", filter(anyType, match, ptr("payments")), other, true},
		{"match without a name selects all", filter(topic, match, nil), pre, true},
		{"null principal selects all", entry(nil, nil, anyOp, anyPerm), wildPrincipal, true},
		{"principal is exact", entry(ptr("User:alice"), nil, anyOp, anyPerm), lit, true},
		{"principal leaves the wildcard principal", entry(ptr("User:alice"), nil, anyOp, anyPerm), wildPrincipal, false},
		{"wildcard principal selects its own only", entry(ptr(WildcardPrincipal), nil, anyOp, anyPerm), lit, false},
		{"host is exact", entry(nil, ptr("10.0.0.1"), anyOp, anyPerm), hosted, true},
		{"host leaves the wildcard host", entry(nil, ptr("10.0.0.1"), anyOp, anyPerm), lit, false},
		{"wildcard host selects its own", entry(nil, ptr(Wildcard), anyOp, anyPerm), lit, true},
		{"operation is exact", entry(nil, nil, opRead, anyPerm), lit, true},
		{"operation has no implication", entry(nil, nil, opDescribe, anyPerm), lit, false},
		{"operation leaves ALL", entry(nil, nil, opRead, anyPerm), all, false},
		{"ALL selects ALL", entry(nil, nil, opAll, anyPerm), all, true},
		{"permission is exact", entry(nil, nil, anyOp, allow), denied, false},
		{"deny selects deny", entry(nil, nil, anyOp, deny), denied, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.f.Matches(tt.b), "%+v", tt.b)
		})
	}
}

func TestBindingFilterSelectsItselfAlone(t *testing.T) {
	b := fromHost(bind(topic, prefixed, "pay", "User:alice", opRead, deny), "10.0.0.1")
	f := b.Filter()
	assert.NoError(t, f.Validate())
	assert.True(t, f.Matches(b))
	for _, other := range []Binding{
		fromHost(b, Wildcard),
		bind(topic, literal, "pay", "User:alice", opRead, deny),
		bind(topic, prefixed, "p", "User:alice", opRead, deny),
	} {
		assert.False(t, f.Matches(other), "%v", other)
	}
}
