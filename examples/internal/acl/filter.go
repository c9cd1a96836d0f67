package acl

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Filter selects bindings for DescribeAcls and DeleteAcls: Kafka's
// AclBindingFilter, a ResourcePatternFilter with an
// AccessControlEntryFilter. Its fields take the values of the requests'
// wire fields, nil strings included.
//
// Each field narrows the selection unless it is ANY (the enums) or nil
// (the strings); a non-nil string matches exactly, with no wildcard: a
// Principal of "User:*" selects the bindings of the wildcard principal,
// not every binding. The name is read with the pattern type:
//
//   - LITERAL or PREFIXED: the bindings of that pattern type whose name is
//     ResourceName;
//   - ANY: the bindings of either pattern type whose name is ResourceName;
//   - MATCH (KIP-290): every binding that applies to the resource named
//     ResourceName: LITERAL ones of that name or of [Wildcard], and
//     PREFIXED ones whose name begins ResourceName. With a nil name it
//     selects every binding.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Any returns the filter that selects every binding (Kafka's
// AclBindingFilter.ANY).
func Any() Filter {
	return Filter{
		ResourceType: kmsg.ACLResourceTypeAny,
		PatternType:  kmsg.ACLResourcePatternTypeAny,
		Operation:    kmsg.ACLOperationAny,
		Permission:   kmsg.ACLPermissionTypeAny,
	}
}

// Filter returns the filter that selects b alone (Kafka's
// AclBinding.toFilter): how a handler or a log replay removes one binding.
func (b Binding) Filter() Filter {
	return Filter{
		ResourceType: b.ResourceType,
		ResourceName: &b.ResourceName,
		PatternType:  b.PatternType,
		Principal:    &b.Principal,
		Host:         &b.Host,
		Operation:    b.Operation,
		Permission:   b.Permission,
	}
}

// Validate returns nil if DescribeAcls and DeleteAcls accept f, or an
// error that is [ErrInvalidFilter] and whose [Code] is INVALID_REQUEST.
// As Kafka's AclControlManager.validateFilter (isUnknown), it refuses
// UNKNOWN, and codes Kafka does not know, in any of the four enums; ANY
// is valid in each, MATCH too as the pattern type.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType < kmsg.ACLResourceTypeAny || f.ResourceType > kmsg.ACLResourceTypeUser:
		return invalidFilter("invalid resource type %s (%d)", f.ResourceType, f.ResourceType)
	case f.PatternType < kmsg.ACLResourcePatternTypeAny || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return invalidFilter("invalid pattern type %s (%d)", f.PatternType, f.PatternType)
	case f.Operation < kmsg.ACLOperationAny || f.Operation > kmsg.ACLOperationDescribeTokens:
		return invalidFilter("invalid operation %s (%d)", f.Operation, f.Operation)
	case f.Permission < kmsg.ACLPermissionTypeAny || f.Permission > kmsg.ACLPermissionTypeAllow:
		return invalidFilter("invalid permission type %s (%d)", f.Permission, f.Permission)
	}
	return nil
}

// Matches reports whether f selects b, as Kafka's AclBindingFilter.matches
// does. It does not validate f: an UNKNOWN field selects nothing that a
// valid binding holds. O(len of the names).
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b.ResourceType, b.ResourceName, b.PatternType) &&
		f.matchesEntry(b.Principal, b.Host, b.Operation, b.Permission)
}

// matchesPattern is Kafka's ResourcePatternFilter.matches.
func (f Filter) matchesPattern(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != rt {
		return false
	}
	if f.PatternType != kmsg.ACLResourcePatternTypeAny && f.PatternType != kmsg.ACLResourcePatternTypeMatch &&
		f.PatternType != pt {
		return false
	}
	if f.ResourceName == nil {
		return true
	}
	want := *f.ResourceName
	if f.PatternType != kmsg.ACLResourcePatternTypeMatch {
		return want == name
	}
	switch pt {
	case kmsg.ACLResourcePatternTypeLiteral:
		return want == name || name == Wildcard
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(want, name)
	}
	return false
}

// matchesEntry is Kafka's AccessControlEntryFilter.matches.
func (f Filter) matchesEntry(principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) bool {
	return (f.Principal == nil || *f.Principal == principal) &&
		(f.Host == nil || *f.Host == host) &&
		(f.Operation == kmsg.ACLOperationAny || f.Operation == op) &&
		(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == perm)
}
