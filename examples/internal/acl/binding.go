package acl

import (
	"cmp"
	"fmt"
	"net/netip"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// Wildcard is the resource name of a LITERAL binding that applies to
	// every resource of its type, and the host that matches every client
	// (Kafka's ResourcePattern.WILDCARD_RESOURCE and AclEntry.WILDCARD_HOST).
	Wildcard = "*"
	// WildcardPrincipal is the principal of a binding that applies to
	// every principal, of any type (Kafka's AclEntry.WILDCARD_PRINCIPAL).
	// Only this spelling is a wildcard: "Group:*" names a principal.
	WildcardPrincipal = "User:*"
	// ClusterName is the one valid name of a CLUSTER resource (Kafka's
	// Resource.CLUSTER_NAME).
	ClusterName = "kafka-cluster"
)

// Binding is one ACL: Kafka's AclBinding, a ResourcePattern (type, name,
// pattern type) with an AccessControlEntry (principal, host, operation,
// permission). Its fields take the values of CreateAcls' wire fields, so
// that a handler copies them across. A Binding is a plain value; compare
// bindings with ==.
type Binding struct {
	// ResourceType is TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID,
	// DELEGATION_TOKEN or USER.
	ResourceType kmsg.ACLResourceType
	// ResourceName is the resource's name ([Wildcard] for every resource
	// of the type) or, with PREFIXED, the prefix of the names it covers.
	ResourceName string
	// PatternType is LITERAL or PREFIXED (KIP-290).
	PatternType kmsg.ACLResourcePatternType
	// Principal is "Type:name", such as "User:alice", or
	// [WildcardPrincipal].
	Principal string
	// Host is the client's IP address, or [Wildcard] for any host.
	Host string
	// Operation is ALL or one operation (READ, WRITE, ...).
	Operation kmsg.ACLOperation
	// Permission is ALLOW or DENY.
	Permission kmsg.ACLPermissionType
}

// Validate returns nil if CreateAcls accepts b, or an error that is
// [ErrInvalidBinding] and whose [Code] is INVALID_REQUEST, with a message
// for the response. It checks what Kafka's AclControlManager.validateNewAcl
// and AclApis.handleCreateAcls check:
//
//   - the resource type is a concrete one (not ANY or UNKNOWN), and so is
//     the operation (not ANY or UNKNOWN), the permission (ALLOW or DENY)
//     and the pattern type (LITERAL or PREFIXED, not ANY or MATCH);
//   - the name is not empty, and a CLUSTER's is [ClusterName];
//
// and, beyond Kafka, which stores such bindings and never matches them:
//
//   - [Wildcard] as a name is LITERAL only (a PREFIXED "*" would cover the
//     names that begin with a star, which is never what was meant);
//   - the principal is "Type:name", neither part empty;
//   - the host is [Wildcard] or an IP address (a host name never matches,
//     as Kafka matches the client's address).
//
// An operation need not be one of [Supported] for the resource type:
// Kafka stores a READ on a CLUSTER, and so does this package. O(len(b)).
func (b Binding) Validate() error {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster,
		kmsg.ACLResourceTypeTransactionalId, kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	default:
		return invalidBinding("invalid resource type %s (%d)", b.ResourceType, b.ResourceType)
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return invalidBinding("invalid pattern type %s (%d)", b.PatternType, b.PatternType)
	}
	if b.Operation < kmsg.ACLOperationAll || b.Operation > kmsg.ACLOperationDescribeTokens {
		return invalidBinding("invalid operation %s (%d)", b.Operation, b.Operation)
	}
	switch b.Permission {
	case kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny:
	default:
		return invalidBinding("invalid permission type %s (%d)", b.Permission, b.Permission)
	}
	switch {
	case b.ResourceName == "":
		return invalidBinding("resource name should not be empty")
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName:
		return invalidBinding("the only valid name for the CLUSTER resource is %s", ClusterName)
	case b.ResourceName == Wildcard && b.PatternType != kmsg.ACLResourcePatternTypeLiteral:
		return invalidBinding("the wildcard resource name %q is only valid with pattern type LITERAL", Wildcard)
	}
	if !validPrincipal(b.Principal) {
		return invalidBinding("principal %q is not of the form principalType:principalName", b.Principal)
	}
	if _, ok := parseHost(b.Host); !ok && b.Host != Wildcard {
		return invalidBinding("host %q is neither %q nor an IP address", b.Host, Wildcard)
	}
	return nil
}

// validPrincipal reports whether p is "Type:name", both parts non-empty
// (the name may hold colons: Kafka splits at the first).
func validPrincipal(p string) bool {
	typ, name, ok := strings.Cut(p, ":")
	return ok && typ != "" && name != ""
}

// parseHost returns host as an address in the form matching compares:
// an IPv4-mapped IPv6 address is its IPv4 address, as Java's InetAddress
// (whose getHostAddress Kafka matches) gives it. It allocates nothing for
// a valid address.
func parseHost(host string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// String returns b in the form of Kafka's AclBinding.toString.
func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), "+
		"entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
}

// CompareBindings orders bindings as [Authorizer.Describe] returns them
// (and as the metadata image lists them):
// by resource type, name and pattern type, so that the bindings of one
// resource pattern are adjacent (DescribeAcls groups them so), then by
// principal, host, operation and permission.
func CompareBindings(a, b Binding) int {
	return cmp.Or(
		cmp.Compare(a.ResourceType, b.ResourceType),
		strings.Compare(a.ResourceName, b.ResourceName),
		cmp.Compare(a.PatternType, b.PatternType),
		strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Permission, b.Permission),
	)
}
