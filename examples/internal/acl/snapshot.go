package acl

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// numTypes bounds the resource type codes: types[rt] for rt of TOPIC (2)
// to USER (7); 0 and 1 (UNKNOWN, ANY) stay empty.
const numTypes = int(kmsg.ACLResourceTypeUser) + 1

// snapshot is one immutable state of the bindings, which readers use
// without a lock. A writer copies it (a small array), changes the copy's
// trees by path copying, and publishes the copy.
type snapshot struct {
	types [numTypes]index
	count int // bindings in all
}

// index holds the bindings of one resource type.
type index struct {
	root *node // key ""; nil when the type has no binding
	// wildcard is root's node keyed Wildcard, or nil: its LITERAL rules
	// apply to every name, so Authorize looks it up each time.
	wildcard *node
}

func concreteType(rt kmsg.ACLResourceType) bool {
	return rt >= kmsg.ACLResourceTypeTopic && int(rt) < numTypes
}

func concreteOp(op kmsg.ACLOperation) bool {
	return op >= kmsg.ACLOperationAll && op <= kmsg.ACLOperationDescribeTokens
}

// edit applies edit to the node keyed name in rt's tree, in s, a copy
// that no reader has yet.
func (s *snapshot) edit(rt kmsg.ACLResourceType, name string, edit func(*node)) {
	idx := &s.types[rt]
	root := idx.root
	if root == nil {
		root = &node{}
	}
	root = root.with(name, edit)
	if len(root.children) == 0 {
		root = nil // the root never holds rules: names are not empty
	}
	idx.root = root
	idx.wildcard = root.find(Wildcard)
}

// add adds the valid binding b to s, a copy no reader has yet, and
// reports whether it was new (Kafka keeps one of equal bindings, and
// creating one again succeeds and changes nothing).
func (s *snapshot) add(b Binding) bool {
	r := newRule(b)
	if n := s.types[b.ResourceType].root.find(b.ResourceName); n != nil {
		if _, found := slices.BinarySearchFunc(n.rules(b.PatternType).all, r, compareRules); found {
			return false
		}
	}
	s.edit(b.ResourceType, b.ResourceName, func(n *node) {
		rs, _ := n.rules(b.PatternType).with(r)
		n.setRules(b.PatternType, rs)
	})
	s.count++
	return true
}

// remove removes b, which s holds, from s, a copy no reader has yet.
func (s *snapshot) remove(b Binding) {
	r := newRule(b)
	s.edit(b.ResourceType, b.ResourceName, func(n *node) {
		rs, _ := n.rules(b.PatternType).without(r)
		n.setRules(b.PatternType, rs)
	})
	s.count--
}

// collect returns the bindings f selects, in CompareBindings order. It
// visits only the nodes that can hold them: the one node named by a
// LITERAL, PREFIXED or ANY filter with a name, the path of a MATCH
// filter's name, every node otherwise.
func (s *snapshot) collect(f Filter) []Binding {
	var out []Binding
	emit := func(rt kmsg.ACLResourceType, n *node) {
		for _, pt := range [...]kmsg.ACLResourcePatternType{kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed} {
			if !f.matchesPattern(rt, n.key, pt) {
				continue
			}
			for _, r := range n.rules(pt).all {
				if f.matchesEntry(r.principal, r.host, r.op, r.perm) {
					out = append(out, Binding{
						ResourceType: rt, ResourceName: n.key, PatternType: pt,
						Principal: r.principal, Host: r.host, Operation: r.op, Permission: r.perm,
					})
				}
			}
		}
	}
	for rt := kmsg.ACLResourceTypeTopic; int(rt) < numTypes; rt++ {
		if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != rt {
			continue
		}
		idx := &s.types[rt]
		switch {
		case f.ResourceName == nil:
			idx.root.each(func(n *node) { emit(rt, n) })
		case f.PatternType == kmsg.ACLResourcePatternTypeMatch:
			if idx.wildcard != nil {
				emit(rt, idx.wildcard)
			}
			name := *f.ResourceName
			for n := idx.root; n != nil; {
				if n.key != Wildcard { // emitted above
					emit(rt, n)
				}
				if len(n.key) == len(name) {
					break
				}
				c := n.child(name[len(n.key)])
				if c == nil || len(c.key) > len(name) || name[:len(c.key)] != c.key {
					break
				}
				n = c
			}
		default:
			if n := idx.root.find(*f.ResourceName); n != nil {
				emit(rt, n)
			}
		}
	}
	// Each tree yields its keys in ascending order, the types come in
	// order, and so do a node's rules; only a MATCH filter's wildcard
	// node is out of place. Sorting keeps the promise simple.
	slices.SortFunc(out, CompareBindings)
	return out
}
