package acl

import (
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAddKeepsOneOfEqualBindings(t *testing.T) {
	a := newTestAuthorizer(t, nil)
	b1 := bind(topic, literal, "t", alice, opRead, allow)
	b2 := bind(topic, prefixed, "t", alice, opRead, allow)
	added, err := a.Add(b1, b2, b1)
	require.NoError(t, err)
	assert.Equal(t, []Binding{b1, b2}, added, "new ones, in the order given, each once")
	assert.Equal(t, 2, a.Len())

	added, err = a.Add(b2, fromHost(b1, "10.0.0.1"))
	require.NoError(t, err)
	assert.Equal(t, []Binding{fromHost(b1, "10.0.0.1")}, added, "adding a held binding changes nothing")
	assert.Equal(t, 3, a.Len())
}

func TestAddIsAllOrNothing(t *testing.T) {
	a := newTestAuthorizer(t, nil)
	good := bind(topic, literal, "t", alice, opRead, allow)
	bad := bind(topic, literal, "", alice, opRead, allow)
	added, err := a.Add(good, bad)
	assert.ErrorIs(t, err, ErrInvalidBinding)
	assert.Nil(t, added)
	assert.Equal(t, 0, a.Len(), "no binding of a batch with an invalid one is added")
}

func TestDescribeOrder(t *testing.T) {
	bs := []Binding{
		bind(group, literal, "g", alice, opRead, allow),
		bind(topic, prefixed, "b", alice, opRead, allow),
		bind(topic, literal, "b", bob, opRead, allow),
		bind(topic, literal, "b", alice, opWrite, allow),
		bind(topic, literal, "b", alice, opRead, deny),
		bind(topic, literal, "b", alice, opRead, allow),
		fromHost(bind(topic, literal, "b", alice, opRead, allow), "10.0.0.1"),
		bind(topic, literal, "a", bob, opRead, allow),
		bind(topic, literal, Wildcard, bob, opRead, allow),
		bind(topic, literal, "!", bob, opRead, allow),
		bind(cluster, literal, ClusterName, alice, opAlter, allow),
	}
	want := []Binding{
		bind(topic, literal, "!", bob, opRead, allow),
		bind(topic, literal, Wildcard, bob, opRead, allow),
		bind(topic, literal, "a", bob, opRead, allow),
		bind(topic, literal, "b", alice, opRead, deny), // DENY (2) before ALLOW (3)
		bind(topic, literal, "b", alice, opRead, allow),
		bind(topic, literal, "b", alice, opWrite, allow),
		fromHost(bind(topic, literal, "b", alice, opRead, allow), "10.0.0.1"), // host before operation; "*" first
		bind(topic, literal, "b", bob, opRead, allow),
		bind(topic, prefixed, "b", alice, opRead, allow),
		bind(group, literal, "g", alice, opRead, allow),
		bind(cluster, literal, ClusterName, alice, opAlter, allow),
	}
	// Whatever the order of the adds, and through Replace too.
	for seed := range uint64(5) {
		r := rand.New(rand.NewPCG(seed, 1))
		shuffled := slices.Clone(bs)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		a := newTestAuthorizer(t, shuffled)
		got, err := a.Describe(Any())
		require.NoError(t, err)
		assert.Equal(t, want, got, "seed %d", seed)

		require.NoError(t, a.Replace(shuffled))
		got, err = a.Describe(Any())
		require.NoError(t, err)
		assert.Equal(t, want, got, "seed %d, after Replace", seed)
	}
}

func TestDescribeRefusesAnInvalidFilter(t *testing.T) {
	a := newTestAuthorizer(t, []Binding{bind(topic, literal, "t", alice, opRead, allow)})
	got, err := a.Describe(Filter{})
	assert.ErrorIs(t, err, ErrInvalidFilter)
	assert.Nil(t, got)
}

func TestRemove(t *testing.T) {
	lit := bind(topic, literal, "payments", alice, opRead, allow)
	pre := bind(topic, prefixed, "pay", alice, opRead, allow)
	wild := bind(topic, literal, Wildcard, bob, opWrite, deny)
	grp := bind(group, literal, "payments", alice, opRead, allow)
	hosted := fromHost(bind(topic, literal, "payments", bob, opRead, allow), "10.0.0.1")
	all := []Binding{lit, pre, wild, grp, hosted}

	byName := func(pt kmsg.ACLResourcePatternType, name string) Filter {
		f := Any()
		f.ResourceType, f.PatternType, f.ResourceName = topic, pt, &name
		return f
	}
	withEntry := func(f func(*Filter)) Filter {
		x := Any()
		f(&x)
		return x
	}
	tests := []struct {
		name string
		f    Filter
		want []Binding // in Describe order
	}{
		{"any", Any(), []Binding{wild, pre, lit, hosted, grp}},
		{"a binding's own filter", lit.Filter(), []Binding{lit}},
		{"literal name", byName(literal, "payments"), []Binding{lit, hosted}},
		{"prefixed name", byName(prefixed, "pay"), []Binding{pre}},
		{"any pattern, name", byName(kmsg.ACLResourcePatternTypeAny, "pay"), []Binding{pre}},
		{"match", byName(match, "payments"), []Binding{wild, pre, lit, hosted}},
		{"match a name only the wildcard applies to", byName(match, "orders"), []Binding{wild}},
		{"match the name *", byName(match, Wildcard), []Binding{wild}},
		{"a name nothing has", byName(literal, "nothing"), nil},
		{"principal", withEntry(func(f *Filter) { f.Principal = ptr(bob) }), []Binding{wild, hosted}},
		{"host", withEntry(func(f *Filter) { f.Host = ptr("10.0.0.1") }), []Binding{hosted}},
		{"operation", withEntry(func(f *Filter) { f.Operation = opWrite }), []Binding{wild}},
		{"permission", withEntry(func(f *Filter) { f.Permission = allow }), []Binding{pre, lit, hosted, grp}},
		{"resource type", withEntry(func(f *Filter) { f.ResourceType = group }), []Binding{grp}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newTestAuthorizer(t, all)
			described, err := a.Describe(tt.f)
			require.NoError(t, err)
			assert.Equal(t, tt.want, described, "Describe")
			removed, err := a.Remove(tt.f)
			require.NoError(t, err)
			assert.Equal(t, tt.want, removed, "Remove returns what it removed")
			left, err := a.Describe(Any())
			require.NoError(t, err)
			for _, b := range all {
				assert.Equal(t, !slices.Contains(tt.want, b), slices.Contains(left, b), "%v", b)
			}
			assert.Equal(t, len(all)-len(tt.want), a.Len())
		})
	}
}

func TestRemoveUndoesAdd(t *testing.T) {
	a := newTestAuthorizer(t, nil)
	b := bind(topic, literal, "payments", alice, opRead, allow)
	_, err := a.Add(b)
	require.NoError(t, err)
	require.True(t, a.Authorize(alice, "10.0.0.1", opRead, topic, "payments"))
	removed, err := a.Remove(b.Filter())
	require.NoError(t, err)
	assert.Equal(t, []Binding{b}, removed)
	assert.False(t, a.Authorize(alice, "10.0.0.1", opRead, topic, "payments"))
	assert.Nil(t, a.snap.Load().types[topic].root, "an emptied tree is dropped")

	_, err = a.Remove(Filter{})
	assert.ErrorIs(t, err, ErrInvalidFilter)
}

func TestReplace(t *testing.T) {
	a := newTestAuthorizer(t, []Binding{bind(topic, literal, "old", alice, opRead, allow)})
	next := []Binding{bind(topic, literal, "new", alice, opRead, allow), bind(topic, literal, "new", alice, opRead, allow)}
	require.NoError(t, a.Replace(next))
	assert.Equal(t, 1, a.Len(), "duplicates dropped")
	assert.False(t, a.Authorize(alice, "10.0.0.1", opRead, topic, "old"))
	assert.True(t, a.Authorize(alice, "10.0.0.1", opRead, topic, "new"))

	err := a.Replace([]Binding{bind(topic, literal, "newer", alice, opRead, allow), {}})
	assert.ErrorIs(t, err, ErrInvalidBinding)
	assert.True(t, a.Authorize(alice, "10.0.0.1", opRead, topic, "new"), "an invalid set changes nothing")

	require.NoError(t, a.Replace(nil))
	assert.Equal(t, 0, a.Len())
}

// The randomized tests below compare the Authorizer with direct ports of
// Kafka's code over a flat list of bindings: StandardAuthorizerData's
// findResult for every binding, AclBindingFilter.matches, and
// Authorizer.authorizeByResourceType. Names come from a small alphabet, so
// that they are often prefixes of one another.

var (
	randNames      = []string{"a", "ab", "abc", "abd", "b", "ba", "*", "*a", "", "abcd", "x", "\x8b", "a\xff", "a\xfe"}
	randPrincipals = []string{alice, bob, WildcardPrincipal, "Group:ops"}
	randHosts      = []string{Wildcard, "10.0.0.1", "10.0.0.2", "::1"}
	randTypes      = []kmsg.ACLResourceType{topic, group, txnID}
)

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func randBinding(r *rand.Rand) Binding {
	for {
		b := Binding{
			ResourceType: pick(r, randTypes),
			ResourceName: pick(r, randNames),
			PatternType:  pick(r, []kmsg.ACLResourcePatternType{literal, prefixed}),
			Principal:    pick(r, randPrincipals),
			Host:         pick(r, randHosts),
			Operation:    kmsg.ACLOperation(2 + r.IntN(13)),
			Permission:   pick(r, []kmsg.ACLPermissionType{allow, deny}),
		}
		if r.IntN(2) == 0 { // the operations AuthorizeAny is asked about
			b.Operation = pick(r, []kmsg.ACLOperation{opRead, opWrite, opAll})
		}
		if b.Validate() == nil {
			return b
		}
	}
}

func randFilter(r *rand.Rand) Filter {
	f := Filter{
		ResourceType: pick(r, append([]kmsg.ACLResourceType{kmsg.ACLResourceTypeAny}, randTypes...)),
		PatternType:  kmsg.ACLResourcePatternType(1 + r.IntN(4)),
		Operation:    kmsg.ACLOperation(1 + r.IntN(14)),
		Permission:   kmsg.ACLPermissionType(1 + r.IntN(3)),
	}
	if r.IntN(2) == 0 {
		f.ResourceName = ptr(pick(r, randNames))
	}
	if r.IntN(3) == 0 {
		f.Principal = ptr(pick(r, randPrincipals))
	}
	if r.IntN(3) == 0 {
		f.Host = ptr(pick(r, randHosts))
	}
	if r.IntN(3) != 0 { // mostly ANY, so that filters select something
		f.Operation = kmsg.ACLOperationAny
	}
	return f
}

// refAuthorize is StandardAuthorizerData.authorize over a list.
func refAuthorize(bs []Binding, allowIfNoACL bool, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	found, allowed := false, false
	for _, b := range bs {
		if b.ResourceType != rt {
			continue
		}
		switch {
		case b.PatternType == literal && (b.ResourceName == name || b.ResourceName == Wildcard):
		case b.PatternType == prefixed && strings.HasPrefix(name, b.ResourceName):
		default:
			continue
		}
		found = true
		if b.Principal != principal && b.Principal != WildcardPrincipal {
			continue
		}
		if b.Host != Wildcard && !sameAddress(b.Host, host) {
			continue
		}
		if b.Operation != opAll {
			if b.Permission == allow {
				switch op {
				case opDescribe:
					if !slices.Contains([]kmsg.ACLOperation{opDescribe, opRead, opWrite, opDelete, opAlter}, b.Operation) {
						continue
					}
				case opDescribeConfigs:
					if !slices.Contains([]kmsg.ACLOperation{opDescribeConfigs, opAlterConfigs}, b.Operation) {
						continue
					}
				default:
					if op != b.Operation {
						continue
					}
				}
			} else if op != b.Operation {
				continue
			}
		}
		if b.Permission == deny {
			return false
		}
		allowed = true
	}
	if allowed {
		return true
	}
	return !found && allowIfNoACL
}

func sameAddress(a, b string) bool {
	x, ok1 := parseHost(a)
	y, ok2 := parseHost(b)
	return ok1 && ok2 && x == y
}

// refAuthorizeAny is Authorizer.authorizeByResourceType over a list.
func refAuthorizeAny(bs []Binding, allowIfNoACL bool, principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if refAuthorize(bs, allowIfNoACL, principal, host, op, rt, hardcodedName) {
		return true
	}
	denyLit, denyPre := map[string]bool{}, map[string]bool{}
	allowLit, allowPre := map[string]bool{}, map[string]bool{}
	wildAllow := false
	for _, b := range bs {
		if b.ResourceType != rt ||
			b.Host != Wildcard && !sameAddress(b.Host, host) ||
			b.Principal != principal && b.Principal != WildcardPrincipal ||
			b.Operation != op && b.Operation != opAll {
			continue
		}
		switch {
		case b.Permission == deny && b.PatternType == literal && b.ResourceName == Wildcard:
			return false
		case b.Permission == deny && b.PatternType == literal:
			denyLit[b.ResourceName] = true
		case b.Permission == deny:
			denyPre[b.ResourceName] = true
		case b.PatternType == literal && b.ResourceName == Wildcard:
			wildAllow = true
		case b.PatternType == literal:
			allowLit[b.ResourceName] = true
		default:
			allowPre[b.ResourceName] = true
		}
	}
	if wildAllow {
		return true
	}
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPre[name[:i]] {
				return true
			}
		}
		return false
	}
	for name := range allowLit {
		if !denyLit[name] && !dominated(name) {
			return true
		}
	}
	for name := range allowPre {
		if !dominated(name) {
			return true
		}
	}
	return false
}

// TestAgainstKafkaPorts adds and removes random bindings, and after each
// step compares every answer with the ports' over the same list.
func TestAgainstKafkaPorts(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 22))
	for round := range 10 {
		allowIfNoACL := round%2 == 1
		a := newTestAuthorizer(t, nil, WithAllowEveryoneIfNoACLFound(allowIfNoACL))
		var held []Binding
		for step := range 30 {
			if r.IntN(4) == 0 && len(held) > 0 {
				f := randFilter(r)
				removed, err := a.Remove(f)
				require.NoError(t, err)
				var want, kept []Binding
				for _, b := range held {
					if f.Matches(b) {
						want = append(want, b)
					} else {
						kept = append(kept, b)
					}
				}
				slices.SortFunc(want, CompareBindings)
				require.Equal(t, want, removed, "round %d step %d: Remove(%+v)", round, step, f)
				held = kept
			} else {
				bs := []Binding{randBinding(r), randBinding(r)}
				_, err := a.Add(bs...)
				require.NoError(t, err)
				for _, b := range bs {
					if !slices.Contains(held, b) {
						held = append(held, b)
					}
				}
			}
			require.Equal(t, len(held), a.Len())
			checkAgainstPorts(t, r, a, held, allowIfNoACL)
		}
	}
}

func checkAgainstPorts(t *testing.T, r *rand.Rand, a *Authorizer, held []Binding, allowIfNoACL bool) {
	t.Helper()
	for range 20 {
		f := randFilter(r)
		got, err := a.Describe(f)
		require.NoError(t, err)
		var want []Binding
		for _, b := range held {
			if f.Matches(b) {
				want = append(want, b)
			}
		}
		slices.SortFunc(want, CompareBindings)
		require.Equal(t, want, got, "Describe(%+v)", f)
	}
	names := append([]string{"abce", "zz", hardcodedName}, randNames...)
	for range 100 {
		principal := pick(r, []string{alice, bob, "Group:ops"})
		host := pick(r, []string{"10.0.0.1", "::1", "not-an-address"})
		rt := pick(r, randTypes)
		name := pick(r, names)
		ops := a.AuthorizedOperations(principal, host, rt, name)
		for op := opAll; op <= kmsg.ACLOperationDescribeTokens; op++ {
			want := refAuthorize(held, allowIfNoACL, principal, host, op, rt, name)
			require.Equal(t, want, a.Authorize(principal, host, op, rt, name),
				"Authorize(%s, %s, %s, %s, %q) over %v", principal, host, op, rt, name, held)
			if Supported(rt).Contains(op) {
				require.Equal(t, want, ops.Contains(op), "AuthorizedOperations, %s", op)
			}
		}
		op := pick(r, []kmsg.ACLOperation{opRead, opWrite, opDescribe, opAll})
		require.Equal(t, refAuthorizeAny(held, allowIfNoACL, principal, host, op, rt),
			a.AuthorizeAny(principal, host, op, rt),
			"AuthorizeAny(%s, %s, %s, %s) over %v", principal, host, op, rt, held)
	}
}

// TestConcurrentReadersSeeWholeWrites runs checks while writers add and
// remove pairs of bindings (an ALLOW and the DENY that overrides it) in
// one call: a reader that saw half of a write would find alice allowed.
// Under -race it also checks that readers and writers share nothing
// unguarded.
func TestConcurrentReadersSeeWholeWrites(t *testing.T) {
	a := newTestAuthorizer(t, nil)
	const writers, readers, rounds = 2, 4, 2000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			name := []string{"orders", "payments"}[w]
			pair := []Binding{
				bind(topic, literal, name, alice, opRead, allow),
				bind(topic, prefixed, name[:3], alice, opRead, deny),
				bind(topic, literal, name, bob, opRead, allow),
			}
			f := Any()
			f.ResourceType, f.PatternType, f.ResourceName = topic, match, &name
			for range rounds {
				_, err := a.Add(pair...)
				assert.NoError(t, err)
				_, err = a.Remove(f)
				assert.NoError(t, err)
				if w == 0 {
					assert.NoError(t, a.Replace(pair))
					assert.NoError(t, a.Replace(nil))
				}
			}
		})
	}
	var readersWG sync.WaitGroup
	for range readers {
		readersWG.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, name := range []string{"orders", "payments"} {
					assert.False(t, a.Authorize(alice, "10.0.0.1", opRead, topic, name), "half a write seen")
					assert.False(t, a.AuthorizedOperations(alice, "10.0.0.1", topic, name).Contains(opRead))
					// bob sees the whole write or none: allowed, or no binding at all.
					bs, err := a.Describe(Any())
					assert.NoError(t, err)
					assert.Contains(t, []int{0, 3, 6}, len(bs), "a reader sees whole writes")
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readersWG.Wait()
	assert.Equal(t, 0, a.Len())
}
