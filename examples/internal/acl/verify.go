package acl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// verify panics unless s keeps the trees' promises (see node): keys
// extend their parent's, labels name the children in order, no node but
// the root is empty or a lone child's stand-in, rules are sorted, unique
// and valid, the wildcard node is the tree's, and count is right. It
// runs before every write is published when invariants is on. O(size).
func (s *snapshot) verify() {
	total := 0
	for rt := range kmsg.ACLResourceType(numTypes) {
		idx := &s.types[rt]
		if idx.root == nil {
			if idx.wildcard != nil {
				panic(fmt.Sprintf("acl: type %s has a wildcard node and no tree", rt))
			}
			continue
		}
		if !concreteType(rt) {
			panic(fmt.Sprintf("acl: type %s has a tree", rt))
		}
		if idx.root.key != "" || idx.root.literal.len()+idx.root.prefixed.len() > 0 || len(idx.root.children) == 0 {
			panic(fmt.Sprintf("acl: type %s: root %q holds rules or nothing", rt, idx.root.key))
		}
		if w := idx.root.find(Wildcard); w != idx.wildcard {
			panic(fmt.Sprintf("acl: type %s: stale wildcard node", rt))
		}
		total += verifyNode(rt, idx.root, true)
	}
	if total != s.count {
		panic(fmt.Sprintf("acl: %d bindings counted, %d held", s.count, total))
	}
}

func verifyNode(rt kmsg.ACLResourceType, n *node, root bool) int {
	held := n.literal.len() + n.prefixed.len()
	if !root && held == 0 && len(n.children) < 2 {
		panic(fmt.Sprintf("acl: node %q has no rules and %d children", n.key, len(n.children)))
	}
	if len(n.labels) != len(n.children) {
		panic(fmt.Sprintf("acl: node %q has %d labels for %d children", n.key, len(n.labels), len(n.children)))
	}
	for _, pt := range [...]kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed} {
		rs := n.rules(pt).all
		if wild := n.rules(pt).wild; !slices.Equal(wild, principalRules(rs, WildcardPrincipal)) {
			panic(fmt.Sprintf("acl: node %q: stale %s wildcard-principal rules", n.key, pt))
		}
		for i, r := range rs {
			b := Binding{rt, n.key, pt, r.principal, r.host, r.op, r.perm}
			if err := b.Validate(); err != nil {
				panic(fmt.Sprintf("acl: node holds %v: %v", b, err))
			}
			if addr, _ := parseHost(r.host); addr != r.addr || r.covers != covers(r.op, r.perm) {
				panic(fmt.Sprintf("acl: stale rule for %v", b))
			}
			if i > 0 && compareRules(rs[i-1], r) >= 0 {
				panic(fmt.Sprintf("acl: node %q: %s rules out of order at %d", n.key, pt, i))
			}
		}
	}
	for i, c := range n.children {
		if len(c.key) <= len(n.key) || !strings.HasPrefix(c.key, n.key) {
			panic(fmt.Sprintf("acl: child %q under %q", c.key, n.key))
		}
		if c.key[len(n.key)] != n.labels[i] || i > 0 && n.labels[i-1] >= n.labels[i] {
			panic(fmt.Sprintf("acl: node %q: labels %q out of step at %d", n.key, n.labels, i))
		}
		held += verifyNode(rt, c, false)
	}
	return held
}
