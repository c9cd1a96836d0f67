package kafkanet

import (
	"fmt"
	"net"
	"slices"
	"strings"
)

// ParseListeners reads Kafka's listeners (NAME://host:port,... or one
// bare host:port, a PLAINTEXT listener), advertised.listeners (the same
// by name, or one bare host:port for the first listener) and
// listener.security.protocol.map (NAME:PROTOCOL,...; each protocol's own
// name maps to itself, so "SASL_SSL://host:port" needs no entry). The
// configurations it returns have no TLS configuration yet.
func ParseListeners(listeners, advertised, protocolMap string) ([]ListenerConfig, error) {
	protocols := map[string]SecurityProtocol{}
	for _, p := range []SecurityProtocol{Plaintext, SSL, SASLPlaintext, SASLSSL} {
		protocols[string(p)] = p
	}
	if protocolMap != "" {
		for _, e := range strings.Split(protocolMap, ",") {
			name, proto, ok := strings.Cut(strings.TrimSpace(e), ":")
			p, err := ParseSecurityProtocol(proto)
			if !ok || name == "" || err != nil {
				return nil, fmt.Errorf("listener.security.protocol.map: %q: want NAME:PROTOCOL, a protocol of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", e)
			}
			protocols[strings.ToUpper(name)] = p
		}
	}
	lns, err := parseListeners("listeners", listeners)
	if err != nil {
		return nil, err
	}
	adv, err := parseListeners("advertised.listeners", advertised)
	if err != nil {
		return nil, err
	}
	out := make([]ListenerConfig, 0, len(lns))
	for i, l := range lns {
		p, ok := protocols[l.name]
		if !ok {
			return nil, fmt.Errorf("listeners: %s has no protocol: name one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL, or map it in listener.security.protocol.map", l.name)
		}
		if slices.ContainsFunc(out, func(o ListenerConfig) bool { return o.Name == l.name }) {
			return nil, fmt.Errorf("listeners: %s named twice", l.name)
		}
		lc := ListenerConfig{Name: l.name, Protocol: p, Addr: l.addr}
		for j, a := range adv {
			if a.name == l.name || (a.name == "" && i == 0 && j == 0) {
				lc.Advertised = a.addr
			}
		}
		out = append(out, lc)
	}
	for _, a := range adv {
		if a.name != "" && !slices.ContainsFunc(out, func(o ListenerConfig) bool { return o.Name == a.name }) {
			return nil, fmt.Errorf("advertised.listeners: %s is not among the listeners", a.name)
		}
	}
	return out, nil
}

type namedAddr struct{ name, addr string }

// parseListeners reads NAME://host:port,... or one bare host:port (named
// PLAINTEXT in listeners, unnamed in advertised.listeners).
func parseListeners(setting, s string) ([]namedAddr, error) {
	if s == "" {
		return nil, nil
	}
	if !strings.Contains(s, "://") {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", setting, s, err)
		}
		name := ""
		if setting == "listeners" {
			name = string(Plaintext)
		}
		return []namedAddr{{name, s}}, nil
	}
	var out []namedAddr
	for _, e := range strings.Split(s, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(e), "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s: %q: want NAME://host:port", setting, e)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", setting, e, err)
		}
		out = append(out, namedAddr{strings.ToUpper(name), addr})
	}
	return out, nil
}
