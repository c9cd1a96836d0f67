package kafkanet

import (
	"fmt"
	"net"
	"strconv"
)

// Listener is a server's TCP listener (Kafka's listeners), with the
// address clients are told to connect to (advertised.listeners), which
// Metadata and FindCoordinator answers name.
type Listener struct {
	net.Listener
	host string // immutable
	port int32  // immutable
}

// Listen opens a listener on addr for s, advertising advertised, or, when
// it is empty, the listener's own address. Close closes it, whether Serve
// ran on it or not.
func (s *Server) Listen(addr, advertised string) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if advertised == "" {
		advertised = ln.Addr().String()
	}
	host, port, err := net.SplitHostPort(advertised)
	var p int
	if err == nil {
		p, err = strconv.Atoi(port)
	}
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("advertised.listeners %q: %w", advertised, err)
	}
	l := &Listener{Listener: ln, host: host, port: int32(p)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = ln.Close()
		return nil, net.ErrClosed
	}
	s.listeners[l] = struct{}{}
	return l, nil
}

// Advertised returns the host and port clients are told to connect to.
func (l *Listener) Advertised() (host string, port int32) { return l.host, l.port }

// AdvertisedAddr returns Advertised as host:port.
func (l *Listener) AdvertisedAddr() string {
	return net.JoinHostPort(l.host, strconv.Itoa(int(l.port)))
}
