package kafkanet

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/timer"
)

// Connection creation quotas (KIP-612; Kafka's ConnectionQuotas and its
// acceptor's throttledSockets): connection_creation_rate, set on a client
// IP or on the default IP entity, bounds the connections an IP opens per
// second. Kafka measures an IP's rate with a Rate over the quota windows
// (quota.window.num of quota.window.size.seconds), and so does this file,
// so that a client sees Kafka's numbers: the connection that takes the
// rate over the quota is accepted, not served, and closed once its
// throttle time has passed, as Kafka's acceptor closes it, so that a
// client reconnecting at once is slowed by the throttle rather than
// refused in a loop. It is not counted in the rate (Kafka un-records it),
// nor among the server's connections (max.connections,
// max.connections.per.ip).
//
//	span = since the oldest sample's start, plus the whole windows it falls short of windows-1
//	rate = connections in the samples / span
//	throttle = min((rate - quota) / quota × span, window)
//
// The close is a delayed operation in the Throttle purgatory
// (throttle.go), on the server's throttle clock: no goroutine sleeps for
// it, and Drain closes what is still held. The quotas are the server
// owner's (ConnectionQuotas), read at each connection, so that a quota altered
// applies to the next connection; an IP is measured only while a quota
// applies to it.

// ConnectionQuotas gives the server its connection_creation_rate quotas
// (WithConnectionQuotas): a broker answers from its metadata image. Both
// methods are called on every connection accepted, from the accept
// loops: they must be cheap and safe for concurrent use.
type ConnectionQuotas interface {
	// IPConnectionRate returns the quota set on ip itself, connections
	// per second; ok is false when there is none.
	IPConnectionRate(ip netip.Addr) (rate float64, ok bool)
	// DefaultIPConnectionRate returns the default IP entity's quota,
	// which applies to an IP without one of its own; ok is false when
	// there is none.
	DefaultIPConnectionRate() (rate float64, ok bool)
}

// connRates measures the connection creation rate of each IP a quota
// applies to, as Kafka's ConnectionQuotas does (recordIpConnectionMaybeThrottle).
// Safe for concurrent use.
type connRates struct {
	quotas  ConnectionQuotas // immutable
	windows int              // quota.window.num; immutable
	window  time.Duration    // quota.window.size.seconds; immutable
	clock   timer.Clock      // immutable

	mu        sync.Mutex // guards the following
	byIP      map[netip.Addr]*rate
	lastSweep time.Duration
}

func newConnRates(q ConnectionQuotas, windows int, window time.Duration, clock timer.Clock) *connRates {
	return &connRates{quotas: q, windows: windows, window: window, clock: clock, byIP: make(map[netip.Addr]*rate)}
}

// quota returns the connection_creation_rate that applies to ip (Kafka's
// connectionRateForIp): its own, else the default's; 0 for none, as for
// a rate of 0 or less.
func (r *connRates) quota(ip netip.Addr) float64 {
	v, ok := r.quotas.IPConnectionRate(ip)
	if !ok {
		v, ok = r.quotas.DefaultIPConnectionRate()
	}
	if !ok || v <= 0 || math.IsNaN(v) {
		return 0
	}
	return v
}

// record counts a connection from ip now, and returns how long it is to
// be held before it is closed, with the quota it went over; 0 when it
// is let through (no quota applies, or it is within its quota). A
// connection throttled is taken back off the rate. O(windows) under
// r.mu, and O(IPs measured) at most once per the windows' span to drop
// the rates that no longer hold a connection.
func (r *connRates) record(ip netip.Addr) (throttle time.Duration, limit float64) {
	limit = r.quota(ip) // outside r.mu: it calls out
	if limit == 0 {
		return 0, 0
	}
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(now)
	rt := r.byIP[ip]
	if rt == nil {
		rt = &rate{}
		r.byIP[ip] = rt
	}
	rt.record(1, now, r.windows, r.window)
	observed, span := rt.measure(now, r.windows, r.window)
	if observed <= limit {
		return 0, limit
	}
	rt.record(-1, now, r.windows, r.window) // not accepted: not counted
	// Kafka's QuotaUtils.boundedThrottleTime, capped at one window
	// (ConnectionQuotas' maxThrottleTimeMs).
	ms := math.Round((observed - limit) / limit * float64(span.Milliseconds()))
	return min(time.Duration(ms)*time.Millisecond, r.window), limit
}

// sweepLocked drops the rates whose samples are all obsolete (a new rate
// would measure the same), at most once per the windows' span.
//
// REQUIRES: r.mu held.
func (r *connRates) sweepLocked(now time.Duration) {
	span := time.Duration(r.windows) * r.window
	if now-r.lastSweep < span {
		return
	}
	r.lastSweep = now
	for ip, rt := range r.byIP {
		if rt.obsolete(now, span) {
			delete(r.byIP, ip)
		}
	}
}

// tracked returns how many IPs' rates are kept.
func (r *connRates) tracked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byIP)
}

// rate is Kafka's Rate over a SampledStat: windows samples of a window
// each, and one more for the sample that overlaps the oldest window's
// start. Not safe for concurrent use.
type rate struct {
	samples []sample
	current int
}

// sample is one window's sum, from start; last is when it was last
// recorded in.
type sample struct {
	start, last time.Duration
	value       float64
}

// record adds v to the current sample, or to a new one once the current
// has lasted a window.
func (rt *rate) record(v float64, now time.Duration, windows int, window time.Duration) {
	if len(rt.samples) == 0 {
		rt.samples = append(rt.samples, sample{start: now, last: now})
	}
	if now-rt.samples[rt.current].start >= window {
		rt.current = (rt.current + 1) % (windows + 1)
		if rt.current == len(rt.samples) {
			rt.samples = append(rt.samples, sample{})
		}
		rt.samples[rt.current] = sample{start: now, last: now}
	}
	s := &rt.samples[rt.current]
	s.value += v
	s.last = now
}

// measure returns the rate per second now, and the span it is measured
// over (Rate.windowSize): from the oldest sample's start, and at least
// windows-1 whole windows and the current one's part, so that a burst
// after a quiet spell is not measured over a few milliseconds. A sample
// last recorded in the windows' span ago or longer is reset first
// (SampledStat.purgeObsoleteSamples).
func (rt *rate) measure(now time.Duration, windows int, window time.Duration) (perSecond float64, span time.Duration) {
	expire := time.Duration(windows) * window
	var sum float64
	oldest := now
	for i := range rt.samples {
		s := &rt.samples[i]
		if now-s.last >= expire {
			*s = sample{start: now, last: now}
		}
		sum += s.value
		oldest = min(oldest, s.start)
	}
	span = now - oldest
	if full := int(span / window); full < windows-1 {
		span += time.Duration(windows-1-full) * window
	}
	span = max(span, time.Millisecond)
	return sum / span.Seconds(), span
}

// obsolete reports whether every sample was last recorded in the
// windows' span or longer ago.
func (rt *rate) obsolete(now, span time.Duration) bool {
	for _, s := range rt.samples {
		if now-s.last < span {
			return false
		}
	}
	return true
}

// addrOf returns a connection's client IP, unmapped from IPv6; ok is
// false for an address that is not an IP (a pipe's).
func addrOf(addr net.Addr) (ip netip.Addr, ok bool) {
	if tcp, isTCP := addr.(*net.TCPAddr); isTCP {
		ip, ok = netip.AddrFromSlice(tcp.IP)
		return ip.Unmap(), ok
	}
	ip, err := netip.ParseAddr(hostOf(addr))
	return ip.Unmap(), err == nil
}

// throttleConnection records a connection accepted on nc against its
// IP's connection_creation_rate, and reports whether it went over: it is
// then the server's to hold and close after its throttle, counted and
// logged as a connection_creation_rate refusal.
func (s *Server) throttleConnection(nc net.Conn) bool {
	if s.connRates == nil {
		return false
	}
	ip, ok := addrOf(nc.RemoteAddr())
	if !ok {
		return false
	}
	d, limit := s.connRates.record(ip)
	if d <= 0 {
		return false
	}
	s.refusals.refuse(nc.RemoteAddr(), refuseConnectionRate, zap.Float64("connection_creation_rate", limit),
		zap.Duration("closed_in", d))
	s.holdThenClose(nc, d)
	return true
}

// holdThenClose closes nc after d, by a delayed operation in the Throttle
// purgatory, or at once when there is none (the server drained). The
// socket is not read meanwhile: its client sees the connection open,
// then closed.
func (s *Server) holdThenClose(nc net.Conn, d time.Duration) {
	p := s.throttlePurgatory()
	if p == nil {
		_ = nc.Close()
		return
	}
	// The key stands for the socket: a Conn never served, known to no
	// map of the server's.
	key := &Conn{s: s, nc: nc, remote: nc.RemoteAddr()}
	op := operation.NewFunc(nil, func() { _ = nc.Close() }, nil)
	if _, err := p.TryCompleteElseWatch(op, d, key); err != nil {
		_ = nc.Close() // not taken: the purgatory closed meanwhile
	}
}
