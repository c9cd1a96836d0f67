package acl

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchBindings returns n bindings shaped like a large cluster's: per
// principal, literal topics, prefixed topic families and groups, a few
// host-bound DENYs, and wildcard rules for a monitoring user.
func benchBindings(n int) []Binding {
	bs := make([]Binding, 0, n)
	for i := 0; len(bs) < n; i++ {
		p := fmt.Sprintf("User:svc-%03d", i%500)
		switch i % 10 {
		case 0, 1, 2, 3, 4, 5:
			bs = append(bs, bind(topic, literal, fmt.Sprintf("orders.%05d", i), p, opRead, allow))
		case 6, 7:
			bs = append(bs, bind(topic, prefixed, fmt.Sprintf("team-%04d.", i), p, opWrite, allow))
		case 8:
			bs = append(bs, bind(group, prefixed, fmt.Sprintf("consumers-%04d", i), p, opRead, allow))
		case 9:
			if i%100 == 9 {
				bs = append(bs, bind(topic, literal, Wildcard, fmt.Sprintf("User:monitor-%d", i), opDescribe, allow))
			} else {
				// The owner of the literal topic of i-9, denied from one host.
				owner := fmt.Sprintf("User:svc-%03d", (i-9)%500)
				bs = append(bs, fromHost(bind(topic, literal, fmt.Sprintf("orders.%05d", i-9), owner, opRead, deny), "10.9.9.9"))
			}
		}
	}
	return bs
}

// benchRequests are checks against benchBindings(10000): each answer is
// asserted once by TestBenchRequests.
var benchRequests = []struct {
	name string
	req  request
	want bool
}{
	{"allow-literal", ask("User:svc-010", opRead, topic, "orders.01010"), true},
	{"allow-implied-describe", ask("User:svc-010", opDescribe, topic, "orders.01010"), true},
	{"allow-prefixed", ask("User:svc-006", opWrite, topic, "team-0006.payments.eu"), true},
	{"allow-wildcard", ask("User:monitor-109", opDescribe, topic, "orders.01010"), true},
	{"deny-other-principal", ask("User:svc-011", opRead, topic, "orders.01010"), false},
	{"deny-by-deny-binding", ask("User:svc-010", opRead, topic, "orders.01010").from("10.9.9.9"), false},
	{"no-acl-found", ask("User:svc-010", opRead, topic, "unknown.topic.name"), false},
}

func TestBenchRequests(t *testing.T) {
	a := newTestAuthorizer(t, benchBindings(10000))
	require.Equal(t, 10000, a.Len())
	for _, br := range benchRequests {
		r := br.req
		assert.Equal(t, br.want, a.Authorize(r.principal, r.host, r.op, r.rt, r.name), br.name)
	}
}

// TestAuthorizeDoesNotAllocate holds Authorize and AuthorizedOperations
// to no allocation, for every answer, with a valid host.
func TestAuthorizeDoesNotAllocate(t *testing.T) {
	a := newTestAuthorizer(t, benchBindings(10000), WithSuperUsers("User:admin"))
	for _, br := range benchRequests {
		r := br.req
		allocs := testing.AllocsPerRun(100, func() {
			a.Authorize(r.principal, r.host, r.op, r.rt, r.name)
			a.AuthorizedOperations(r.principal, r.host, r.rt, r.name)
		})
		assert.Zero(t, allocs, br.name)
	}
}

func BenchmarkAuthorize(b *testing.B) {
	a := newTestAuthorizer(b, benchBindings(10000), WithSuperUsers("User:admin"))
	for _, br := range benchRequests {
		r := br.req
		b.Run(br.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a.Authorize(r.principal, r.host, r.op, r.rt, r.name)
			}
		})
	}
	b.Run("super-user", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			a.Authorize("User:admin", "10.0.0.1", opRead, topic, "orders.01010")
		}
	})
	b.Run("parallel-allow-literal", func(b *testing.B) {
		b.ReportAllocs()
		r := benchRequests[0].req
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				a.Authorize(r.principal, r.host, r.op, r.rt, r.name)
			}
		})
	})
}

func BenchmarkAuthorizedOperations(b *testing.B) {
	a := newTestAuthorizer(b, benchBindings(10000))
	r := benchRequests[0].req
	b.ReportAllocs()
	for b.Loop() {
		a.AuthorizedOperations(r.principal, r.host, r.rt, r.name)
	}
}

// BenchmarkAdd is the cost of one write into 10k bindings: a binding
// added and removed again, as a log replays them.
func BenchmarkAdd(b *testing.B) {
	a := newTestAuthorizer(b, benchBindings(10000))
	x := bind(topic, literal, "orders.99999", "User:svc-001", opRead, allow)
	f := x.Filter()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Add(x); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Remove(f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReplace(b *testing.B) {
	a := newTestAuthorizer(b, nil)
	bs := benchBindings(10000)
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Replace(bs); err != nil {
			b.Fatal(err)
		}
	}
}
