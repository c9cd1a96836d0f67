package acl

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rule is a binding as a node of the tree keeps it: its access control
// entry, with what matching needs computed once.
type rule struct {
	principal string
	host      string     // as the binding spells it
	addr      netip.Addr // host parsed (see parseHost); the zero Addr for Wildcard
	op        kmsg.ACLOperation
	perm      kmsg.ACLPermissionType
	covers    OperationSet // the operations it decides: see covers
}

func newRule(b Binding) rule {
	addr, _ := parseHost(b.Host) // validated: an address, or Wildcard
	return rule{
		principal: b.Principal,
		host:      b.Host,
		addr:      addr,
		op:        b.Operation,
		perm:      b.Permission,
		covers:    covers(b.Operation, b.Permission),
	}
}

// compareRules orders a node's rules as CompareBindings orders bindings
// of one resource pattern; principal first, so that one binary search
// finds a principal's rules.
func compareRules(a, b rule) int {
	if c := strings.Compare(a.principal, b.principal); c != 0 {
		return c
	}
	if c := strings.Compare(a.host, b.host); c != 0 {
		return c
	}
	if a.op != b.op {
		return int(a.op) - int(b.op)
	}
	return int(a.perm) - int(b.perm)
}

// rules are the rules of one resource pattern (a name and a pattern
// type). Immutable once in a tree: a change makes a new value.
type rules struct {
	all  []rule // sorted by compareRules, without duplicates
	wild []rule // the rules of WildcardPrincipal: a sub-slice of all, found once here rather than on every check
}

func newRules(all []rule) rules {
	return rules{all: all, wild: principalRules(all, WildcardPrincipal)}
}

func (rs rules) len() int { return len(rs.all) }

// with returns rs with r added, and whether r was new.
func (rs rules) with(r rule) (rules, bool) {
	i, found := slices.BinarySearchFunc(rs.all, r, compareRules)
	if found {
		return rs, false
	}
	return newRules(slices.Insert(slices.Clip(rs.all), i, r)), true
}

// without returns rs with r removed, and whether r was there.
func (rs rules) without(r rule) (rules, bool) {
	i, found := slices.BinarySearchFunc(rs.all, r, compareRules)
	if !found {
		return rs, false
	}
	if len(rs.all) == 1 {
		return rules{}, true
	}
	return newRules(slices.Delete(slices.Clone(rs.all), i, i+1)), true
}

// principalRules returns the rules of principal p in all, sorted by
// compareRules: a sub-slice. It is on every check's path, so it is a plain
// loop (a comparison callback costs more than the search on small nodes),
// and a scan by equality for few rules, which is cheaper than ordering
// strings. O(log len(all)).
func principalRules(all []rule, p string) []rule {
	lo := 0
	if len(all) <= 8 {
		for lo < len(all) && all[lo].principal != p {
			lo++
		}
	} else {
		hi := len(all)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if all[m].principal < p {
				lo = m + 1
			} else {
				hi = m
			}
		}
	}
	j := lo
	for j < len(all) && all[j].principal == p {
		j++
	}
	return all[lo:j]
}

// node is a node of an immutable radix tree of resource names, one tree
// per resource type. A node holds the rules of the LITERAL and PREFIXED
// bindings whose name is its key; its descendants' keys all begin with its
// key. The root's key is "" (no binding has an empty name).
//
// The tree is persistent: a change copies the nodes on the path to the
// changed one and shares the rest, so that a reader holding the old root
// sees the old tree whole. Every node but the root holds rules or has two
// children or more (a node left with neither is removed, and one left with
// a single child gives way to it), so a path has at most one node per
// distinct binding name along it, plus branch points.
type node struct {
	key      string
	literal  rules
	prefixed rules
	// labels[i] is children[i].key[len(key)], the byte its edge begins
	// with; labels is sorted, and so are the children with it.
	labels   string
	children []*node
}

func (n *node) rules(pt kmsg.ACLResourcePatternType) rules {
	if pt == kmsg.ACLResourcePatternTypePrefixed {
		return n.prefixed
	}
	return n.literal
}

func (n *node) setRules(pt kmsg.ACLResourcePatternType, rs rules) {
	if pt == kmsg.ACLResourcePatternTypePrefixed {
		n.prefixed = rs
	} else {
		n.literal = rs
	}
}

// child returns the child whose edge begins with b, or nil. O(fanout),
// as a vectorized byte search.
func (n *node) child(b byte) *node {
	if i := strings.IndexByte(n.labels, b); i >= 0 {
		return n.children[i]
	}
	return nil
}

// find returns the node keyed name, or nil. O(len(name)). n may be nil.
func (n *node) find(name string) *node {
	for n != nil && len(n.key) < len(name) {
		c := n.child(name[len(n.key)])
		if c == nil || !strings.HasPrefix(name, c.key) {
			return nil
		}
		n = c
	}
	if n == nil || n.key != name {
		return nil
	}
	return n
}

// each calls f on every node of the subtree n, in pre-order, which is the
// ascending order of the keys. n may be nil.
func (n *node) each(f func(*node)) {
	if n == nil {
		return
	}
	f(n)
	for _, c := range n.children {
		c.each(f)
	}
}

// with returns a copy of the subtree n in which edit has changed the node
// keyed name (a fresh node if there was none), sharing every node off the
// path to it. The returned node is not normalized (the caller does it,
// the root being exempt); the nodes below it are. O(len(name) + fanout of
// the nodes on the path).
//
// REQUIRES: n.key is a prefix of name.
func (n *node) with(name string, edit func(*node)) *node {
	cp := *n
	if len(name) == len(n.key) {
		edit(&cp)
		return &cp
	}
	depth := len(n.key)
	label := name[depth]
	i := strings.IndexByte(n.labels, label)
	var next *node
	if i < 0 {
		leaf := &node{key: name}
		edit(leaf)
		next = leaf.normalized()
	} else {
		c := n.children[i]
		common := depth + commonPrefix(c.key[depth:], name[depth:])
		switch {
		case common == len(c.key): // c.key is a prefix of name: go down
			next = c.with(name, edit).normalized()
		case common == len(name): // name is a proper prefix of c.key: a node between
			mid := &node{key: name, labels: c.key[common : common+1], children: []*node{c}}
			edit(mid)
			next = mid.normalized()
		default: // they part at common: a branch node for both
			leaf := &node{key: name}
			edit(leaf)
			mid := &node{key: name[:common]}
			mid.adopt(c)
			if l := leaf.normalized(); l != nil {
				mid.adopt(l)
			}
			next = mid.normalized()
		}
	}
	cp.setChild(label, next)
	return &cp
}

// adopt adds c as a child of n, a node being built.
func (n *node) adopt(c *node) {
	depth := len(n.key)
	i := sortedIndex(n.labels, c.key[depth])
	// The label as a one-byte string: string(byte) would encode a byte
	// past 0x7f as a two-byte rune.
	n.labels = n.labels[:i] + c.key[depth:depth+1] + n.labels[i:]
	n.children = slices.Insert(n.children, i, c)
}

// setChild makes c (nil: none) the child of n, a fresh copy, under label,
// copying n's children rather than changing the shared ones.
func (n *node) setChild(label byte, c *node) {
	i := strings.IndexByte(n.labels, label)
	switch {
	case i >= 0 && c != nil:
		n.children = slices.Clone(n.children)
		n.children[i] = c
	case i >= 0:
		n.labels = n.labels[:i] + n.labels[i+1:]
		n.children = slices.Delete(slices.Clone(n.children), i, i+1)
		if len(n.children) == 0 {
			n.labels, n.children = "", nil
		}
	case c != nil:
		n.children = slices.Clone(n.children)
		n.adopt(c)
	}
}

// normalized returns what stands for n in its parent: n if it holds rules
// or branches, its only child if it has one and no rules, nil if it has
// neither.
func (n *node) normalized() *node {
	if n.literal.len() > 0 || n.prefixed.len() > 0 {
		return n
	}
	switch len(n.children) {
	case 0:
		return nil
	case 1:
		return n.children[0]
	}
	return n
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// sortedIndex returns where b goes in the sorted labels.
func sortedIndex(labels string, b byte) int {
	i := 0
	for i < len(labels) && labels[i] < b {
		i++
	}
	return i
}
