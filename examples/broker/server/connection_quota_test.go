package server

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// answered reports whether c's ApiVersions is answered; false when the
// broker closes c without a byte (within 10s).
func answered(c *rawConn) bool {
	c.Send(kmsg.NewPtrApiVersionsRequest())
	_ = c.NC.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.NC.Read(make([]byte, 4))
	return n > 0 && err == nil
}

// TestConnectionCreationRateQuota: once AlterClientQuotas has set
// connection_creation_rate on ip 127.0.0.1, the broker closes, unserved,
// the connections from it over the rate, as Kafka's ConnectionQuotas
// does, and counts them. Measured over two windows of 10s, a rate of 1
// lets 10 connections through however slowly the test dials (a Rate is
// measured over at least one whole window and the current one's part),
// and the 11th through only if dialled after a second, the 12th after
// two...: one of the twenty is closed unless dialling them takes 10s.
func TestConnectionCreationRateQuota(t *testing.T) {
	s := newTestServer(t, func(c *Config) { c.QuotaWindowNum, c.QuotaWindowSize = 2, 10*time.Second })
	admin := dialRaw(t, s) // accepted before the quota: not measured
	resp := alterQuotas(t, admin, 1, false, quotaEntry([][2]string{{metadata.QuotaIP, "127.0.0.1"}},
		setQuota(metadata.QuotaConnectionCreationRate, 1)))
	require.Zero(t, resp.Entries[0].ErrorCode)
	ip := metadata.QuotaEntity{IP: metadata.QuotaNamed("127.0.0.1")}
	require.Eventually(t, func() bool { return s.image().QuotaValues(ip)[metadata.QuotaConnectionCreationRate] == 1 },
		5*time.Second, time.Millisecond, "applied by the broker")

	served := 0
	for range 20 {
		if !answered(dialRaw(t, s)) {
			break
		}
		served++
	}
	assert.GreaterOrEqual(t, served, 10, "the rate's first 10 are served")
	assert.Less(t, served, 20, "one past the rate is closed unanswered")
	assert.Equal(t, 1.0, refused(s, "connection_creation_rate"), "and counted")
	assert.True(t, answered(admin), "the connections open are not touched")
}

// TestIPConnectionQuotasFollowTheImage: the broker's connection quotas
// are the image's connection_creation_rate: an IP's own by its address
// (however its entity names it), the default IP entity's; an alteration
// applies once the broker has applied its record, and a removal leaves
// none.
func TestIPConnectionQuotasFollowTheImage(t *testing.T) {
	s := newTestServer(t)
	alter := func(name *string, op metadata.QuotaOp) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, errs, err := s.ctrl().AlterQuotas(ctx, []metadata.QuotaAlteration{{
			Parts: []metadata.QuotaPart{{Type: metadata.QuotaIP, Name: name}}, Ops: []metadata.QuotaOp{op}}}, false)
		require.NoError(t, err)
		require.NoError(t, errs[0])
	}
	set := func(v float64) metadata.QuotaOp {
		return metadata.QuotaOp{Key: metadata.QuotaConnectionCreationRate, Value: v}
	}
	remove := metadata.QuotaOp{Key: metadata.QuotaConnectionCreationRate, Remove: true}
	q := s.ipQuotas
	// expect waits for the broker to apply what was altered: ip's own
	// quota (the default's, for the zero address) is want, 0 for none.
	expect := func(ip netip.Addr, want float64, msg string) {
		t.Helper()
		require.Eventually(t, func() bool {
			lookup := q.DefaultIPConnectionRate
			if ip.IsValid() {
				lookup = func() (float64, bool) { return q.IPConnectionRate(ip) }
			}
			v, ok := lookup()
			return ok == (want != 0) && v == want
		}, 5*time.Second, time.Millisecond, msg)
	}
	v6, v4, deflt := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("10.0.0.1"), netip.Addr{}

	expect(deflt, 0, "none at first")
	alter(nil, set(3))
	alter(kmsg.StringPtr("10.0.0.1"), set(5))
	alter(kmsg.StringPtr("2001:DB8:0:0:0:0:0:1"), set(7))
	expect(deflt, 3, "the default IP entity's")
	expect(v4, 5, "an IP's own")
	expect(v6, 7, "an IPv6 address's, by its address, not its spelling")
	expect(netip.MustParseAddr("10.0.0.2"), 0, "another IP has none of its own: the default applies to it")

	alter(kmsg.StringPtr("10.0.0.1"), set(2))
	expect(v4, 2, "altered")
	alter(kmsg.StringPtr("10.0.0.1"), remove)
	alter(nil, remove)
	expect(v4, 0, "removed")
	expect(deflt, 0, "removed")
}
