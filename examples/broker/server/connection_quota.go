package server

// connection_creation_rate's enforcement (KIP-612; Kafka's
// ConnectionQuotas, which its ClientQuotaMetadataManager updates from
// the quota records): the network layer measures each client IP's
// connections per second over the quota windows (quota.window.num of
// quota.window.size.seconds) and closes, unserved, the connection that
// takes an IP over its quota, after Kafka's throttle time (kafkanet's
// WithConnectionQuotas). It asks the broker for the quotas at every
// connection: ipQuotas answers from the metadata image this broker has
// applied, so that an AlterClientQuotas applies to the next connection.

import (
	"net/netip"
	"sync/atomic"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// ipQuotas is the broker's kafkanet.ConnectionQuotas: the
// connection_creation_rate quotas of its metadata image, by address. Safe
// for concurrent use.
type ipQuotas struct {
	image func() *metadata.Image // immutable
	// index is the last image's quotas by address, built again when the
	// image has changed: O(IP entities) once per image, O(1) a lookup.
	index atomic.Pointer[ipQuotaIndex]
}

// ipQuotaIndex is one image's connection_creation_rate quotas. Immutable.
type ipQuotaIndex struct {
	im     *metadata.Image
	byAddr map[netip.Addr]float64
	def    float64
	hasDef bool
}

func newIPQuotas(image func() *metadata.Image) *ipQuotas { return &ipQuotas{image: image} }

// IPConnectionRate returns the quota set on ip's own entity. An entity is
// matched by the address its name parses to, as Kafka's broker matches
// it (InetAddress): 2001:DB8:0:0:0:0:0:1 is 2001:db8::1's.
func (q *ipQuotas) IPConnectionRate(ip netip.Addr) (float64, bool) {
	x := q.current()
	v, ok := x.byAddr[ip.Unmap()]
	return v, ok
}

// DefaultIPConnectionRate returns the default IP entity's quota.
func (q *ipQuotas) DefaultIPConnectionRate() (float64, bool) {
	x := q.current()
	return x.def, x.hasDef
}

// current returns the index of the image applied now, building it if the
// image changed since the last. Two accept loops that see a new image at
// once may both build it: the same index, the last stored kept.
func (q *ipQuotas) current() *ipQuotaIndex {
	im := q.image()
	if x := q.index.Load(); x != nil && x.im == im {
		return x
	}
	x := &ipQuotaIndex{im: im}
	if im != nil {
		entries, _ := im.DescribeQuotas([]metadata.QuotaFilter{{Type: metadata.QuotaIP, MatchType: metadata.QuotaMatchSpecified}}, true)
		for _, e := range entries {
			v, ok := e.Values[metadata.QuotaConnectionCreationRate]
			if !ok {
				continue
			}
			if e.Entity.IP.Default {
				x.def, x.hasDef = v, true
				continue
			}
			if addr, err := netip.ParseAddr(e.Entity.IP.Name); err == nil {
				if x.byAddr == nil {
					x.byAddr = make(map[netip.Addr]float64)
				}
				x.byAddr[addr.Unmap()] = v
			}
		}
	}
	q.index.Store(x)
	return x
}
