package kafkanet

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
)

// Listener is a server's TCP listener (Kafka's listeners), with the
// address clients are told to connect to (advertised.listeners), which
// Metadata and FindCoordinator answers name.
type Listener struct {
	net.Listener
	host     string           // immutable
	port     int32            // immutable
	name     string           // immutable
	protocol SecurityProtocol // immutable
	tls      *tls.Config      // immutable; nil without TLS
}

// Listen opens a PLAINTEXT listener on addr for s, advertising advertised,
// or, when it is empty, the listener's own address. Close closes it,
// whether Serve ran on it or not.
func (s *Server) Listen(addr, advertised string) (*Listener, error) {
	return s.ListenWith(ListenerConfig{Addr: addr, Advertised: advertised})
}

// ListenWith opens the listener cfg describes. A SASL protocol needs the
// server's authenticator (WithSASL), a TLS one its cfg.TLS.
func (s *Server) ListenWith(cfg ListenerConfig) (*Listener, error) {
	if cfg.Protocol == "" {
		cfg.Protocol = Plaintext
	}
	if _, err := ParseSecurityProtocol(string(cfg.Protocol)); err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = string(cfg.Protocol)
	}
	switch {
	case cfg.Protocol.TLS() && cfg.TLS == nil:
		return nil, fmt.Errorf("listener %s (%s): no TLS configuration", cfg.Name, cfg.Protocol)
	case !cfg.Protocol.TLS() && cfg.TLS != nil:
		return nil, fmt.Errorf("listener %s (%s): a TLS configuration on a listener without TLS", cfg.Name, cfg.Protocol)
	case cfg.Protocol.SASL() && s.cfg.sasl == nil:
		return nil, fmt.Errorf("listener %s (%s): no SASL mechanisms enabled", cfg.Name, cfg.Protocol)
	}
	addr, advertised := cfg.Addr, cfg.Advertised
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
	l := &Listener{Listener: ln, host: host, port: int32(p), name: cfg.Name, protocol: cfg.Protocol, tls: cfg.TLS}
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

// Name returns the listener's name (CLIENT, PLAINTEXT...).
func (l *Listener) Name() string { return l.name }

// Protocol returns the listener's security protocol.
func (l *Listener) Protocol() SecurityProtocol { return l.protocol }
