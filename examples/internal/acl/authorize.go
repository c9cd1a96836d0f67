package acl

import (
	"net/netip"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// hardcodedName is the resource name AuthorizeAny checks first, as Kafka's
// Authorizer.authorizeByResourceType does, so that super users, and the
// default of a resource without bindings, answer as for a named resource.
const hardcodedName = "hardcode"

// Authorize reports whether principal, connected from host (the client's
// IP address as text), may do op on the resource of type rt named name,
// as Kafka's StandardAuthorizer.authorize answers for a LITERAL resource:
//
//  1. a super user is allowed;
//  2. the bindings that apply to the resource are the LITERAL ones of
//     that name or of [Wildcard], and the PREFIXED ones whose name
//     begins name;
//  3. of those, the ones that match the request are for principal or for
//     [WildcardPrincipal], from host or from [Wildcard], and cover op:
//     ALL covers every operation, an ALLOW of READ, WRITE, DELETE or
//     ALTER covers DESCRIBE too, an ALLOW of ALTER_CONFIGS covers
//     DESCRIBE_CONFIGS too, and any other binding its own operation;
//  4. a matching DENY denies, whatever allows; else a matching ALLOW
//     allows; else, if any binding applies to the resource (whoever it
//     is for), the request is denied; else the answer is the
//     allow.everyone.if.no.acl.found option.
//
// An op or rt that no binding can hold (ANY, UNKNOWN, unknown codes) is
// denied but to super users. It takes no lock and allocates nothing for
// a valid host; O(len(name) + log of the bindings per resource pattern).
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.isSuperUser(principal) {
		return true
	}
	if !concreteOp(op) || !concreteType(rt) {
		return false
	}
	v := a.snap.Load().decide(principal, host, rt, name)
	return v.allowed(a.allowIfNoACL)&bit(op) != 0
}

// AuthorizedOperations returns the operations of [Supported](rt) that
// [Authorizer.Authorize] allows principal from host on the resource: what
// KIP-430's authorized_operations fields carry, through
// [OperationSet.Bitfield]. One lookup answers for every operation.
func (a *Authorizer) AuthorizedOperations(principal, host string, rt kmsg.ACLResourceType, name string) OperationSet {
	supported := Supported(rt)
	if supported == 0 || a.isSuperUser(principal) {
		return supported
	}
	v := a.snap.Load().decide(principal, host, rt, name)
	return v.allowed(a.allowIfNoACL) & supported
}

// AuthorizeAny reports whether principal from host may do op on at least
// one resource of type rt: Kafka's Authorizer.authorizeByResourceType,
// which brokers use where a request names no resource of the type (an
// idempotent producer without a transactional id may write if it may
// write some topic). As Kafka's default implementation, which
// StandardAuthorizer keeps:
//
//  1. if Authorize allows op on a resource named "hardcode", it is
//     allowed (super users; or allow.everyone.if.no.acl.found with no
//     binding applying to that name);
//  2. of the bindings for principal or [WildcardPrincipal], from host or
//     [Wildcard], whose operation is op or ALL (with no implied
//     operations), a DENY of the LITERAL [Wildcard] denies;
//  3. else an ALLOW of the LITERAL [Wildcard] allows;
//  4. else it is allowed if some ALLOW binding is not dominated: a LITERAL
//     one is dominated by a LITERAL DENY of the same name, and either kind
//     by a PREFIXED DENY whose name begins its name (its own name
//     included).
//
// An op or rt that no binding can hold is denied, where Kafka throws. It
// takes no lock; O(bindings of type rt).
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if !concreteOp(op) || !concreteType(rt) {
		return false
	}
	if a.Authorize(principal, host, op, rt, hardcodedName) {
		return true
	}
	idx := &a.snap.Load().types[rt]
	m := matcher{principal: principal, host: host}
	applies := func(r *rule) bool {
		return (r.op == op || r.op == kmsg.ACLOperationAll) && m.matchesHost(r)
	}
	if w := idx.wildcard; w != nil {
		allow := false
		for _, rs := range m.candidates(w.literal) {
			for i := range rs {
				if r := &rs[i]; applies(r) {
					if r.perm != kmsg.ACLPermissionTypeAllow {
						return false
					}
					allow = true
				}
			}
		}
		if allow {
			return true
		}
	}
	return idx.root != nil && m.undominatedAllow(idx.root, false, applies)
}

// undominatedAllow reports whether the subtree n holds an ALLOW that
// applies and that no DENY dominates (step 4 of AuthorizeAny). denied
// says whether a PREFIXED DENY on the path above n applies: the prefixed
// names that begin n's key are exactly its ancestors' keys and its own.
func (m *matcher) undominatedAllow(n *node, denied bool, applies func(*rule) bool) bool {
	var allowLiteral, denyLiteral, allowPrefixed bool
	for _, rs := range m.candidates(n.prefixed) {
		for i := range rs {
			if r := &rs[i]; applies(r) {
				if r.perm == kmsg.ACLPermissionTypeAllow {
					allowPrefixed = true
				} else {
					denied = true
				}
			}
		}
	}
	if n.key != Wildcard { // the LITERAL wildcard was steps 2 and 3
		for _, rs := range m.candidates(n.literal) {
			for i := range rs {
				if r := &rs[i]; applies(r) {
					if r.perm == kmsg.ACLPermissionTypeAllow {
						allowLiteral = true
					} else {
						denyLiteral = true
					}
				}
			}
		}
	}
	if !denied && (allowPrefixed || allowLiteral && !denyLiteral) {
		return true
	}
	if denied {
		// A PREFIXED DENY here dominates every ALLOW below, whose names
		// all begin with this key.
		return false
	}
	for _, c := range n.children {
		if m.undominatedAllow(c, false, applies) {
			return true
		}
	}
	return false
}

func (a *Authorizer) isSuperUser(principal string) bool {
	if len(a.superUsers) == 0 {
		return false
	}
	_, ok := a.superUsers[principal]
	return ok
}

// verdict is what the bindings that apply to a resource say for one
// principal and host.
type verdict struct {
	allow, deny OperationSet // the operations a matching ALLOW, DENY covers
	found       bool         // some binding applies to the resource, for anyone
}

// allowed returns the operations v allows, allowIfNoACL being the answer
// when no binding applies.
func (v verdict) allowed(allowIfNoACL bool) OperationSet {
	allow := v.allow
	if !v.found && allowIfNoACL {
		allow = allOperations
	}
	return allow &^ v.deny
}

// decide gathers the verdict of the bindings that apply to the resource
// of type rt named name, for principal from host: the LITERAL wildcard,
// then every node on the path to name (each PREFIXED rule there is a
// prefix of name), then the node keyed name itself (its LITERAL rules).
//
// REQUIRES: rt is concrete.
func (s *snapshot) decide(principal, host string, rt kmsg.ACLResourceType, name string) verdict {
	idx := &s.types[rt]
	m := matcher{principal: principal, host: host}
	var v verdict
	if w := idx.wildcard; w != nil {
		m.apply(&v, &w.literal)
	}
	for n := idx.root; n != nil; {
		if len(n.prefixed.all) > 0 {
			m.apply(&v, &n.prefixed)
		}
		if len(n.key) == len(name) {
			m.apply(&v, &n.literal)
			break
		}
		c := n.child(name[len(n.key)])
		if c == nil || len(c.key) > len(name) || name[len(n.key):len(c.key)] != c.key[len(n.key):] {
			break
		}
		n = c
	}
	return v
}

// matcher matches rules against one request's principal and host; it
// parses the host once, when a rule first names one.
type matcher struct {
	principal string
	host      string
	addr      netip.Addr
	parsed    int8 // 0: not yet; 1: addr holds host; -1: host is no address
}

// candidates returns the rules of rs for the principal and for the
// wildcard principal: the only ones that can match.
func (m *matcher) candidates(rs rules) [2][]rule {
	if rs.len() == 0 {
		return [2][]rule{}
	}
	own := principalRules(rs.all, m.principal)
	if m.principal == WildcardPrincipal {
		return [2][]rule{own}
	}
	return [2][]rule{own, rs.wild}
}

// apply adds the rules of rs that match to v (StandardAuthorizerData's
// findResult for each); any rule at all means the resource has bindings.
func (m *matcher) apply(v *verdict, rs *rules) {
	if len(rs.all) == 0 {
		return
	}
	v.found = true
	m.add(v, principalRules(rs.all, m.principal))
	if m.principal != WildcardPrincipal {
		m.add(v, rs.wild)
	}
}

// add adds the rules of rs, all for the request's principal, whose host
// matches to v.
func (m *matcher) add(v *verdict, rs []rule) {
	for i := range rs {
		r := &rs[i]
		if !m.matchesHost(r) {
			continue
		}
		if r.perm == kmsg.ACLPermissionTypeAllow {
			v.allow |= r.covers
		} else {
			v.deny |= r.covers
		}
	}
}

// matchesHost reports whether r's host matches the request's: r's is Wildcard,
// or the same address (IPv4-mapped IPv6 addresses as IPv4).
func (m *matcher) matchesHost(r *rule) bool {
	if r.host == Wildcard || r.host == m.host {
		return true // the same text is the same address; else parse
	}
	if m.parsed == 0 {
		m.parsed = -1
		if a, ok := parseHost(m.host); ok {
			m.addr, m.parsed = a, 1
		}
	}
	return m.parsed == 1 && m.addr == r.addr
}
