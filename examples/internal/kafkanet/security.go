package kafkanet

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// SecurityProtocol is a listener's security protocol, Kafka's names
// (listener.security.protocol.map): whether its connections speak TLS, and
// whether they authenticate with SASL before any other request.
type SecurityProtocol string

// The security protocols.
const (
	Plaintext     SecurityProtocol = "PLAINTEXT"
	SSL           SecurityProtocol = "SSL"
	SASLPlaintext SecurityProtocol = "SASL_PLAINTEXT"
	SASLSSL       SecurityProtocol = "SASL_SSL"
)

// ParseSecurityProtocol reads a protocol's name, in any case.
func ParseSecurityProtocol(s string) (SecurityProtocol, error) {
	switch p := SecurityProtocol(strings.ToUpper(s)); p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, nil
	}
	return "", fmt.Errorf("security protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", s)
}

// securityProtocolIDs are the protocols' ids on the wire (Kafka's
// SecurityProtocol ids, as BrokerRegistration carries them).
var securityProtocolIDs = map[SecurityProtocol]int16{Plaintext: 0, SSL: 1, SASLPlaintext: 2, SASLSSL: 3}

// ID returns p's id on the wire, -1 for an unknown one.
func (p SecurityProtocol) ID() int16 {
	if id, ok := securityProtocolIDs[p]; ok {
		return id
	}
	return -1
}

// SecurityProtocolName returns the name of the protocol of wire id id, ""
// for an unknown one.
func SecurityProtocolName(id int16) string {
	for p, i := range securityProtocolIDs {
		if i == id {
			return string(p)
		}
	}
	return ""
}

// TLS reports whether p's connections speak TLS.
func (p SecurityProtocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether p's connections authenticate with SASL.
func (p SecurityProtocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// ListenerConfig is one of a server's listeners (an entry of Kafka's
// listeners, with its advertised.listeners entry).
type ListenerConfig struct {
	// Name is the listener's name (CLIENT, INTERNAL...); empty names it
	// after its protocol.
	Name string
	// Protocol is its security protocol; empty is PLAINTEXT.
	Protocol SecurityProtocol
	// Addr is the host:port to listen on.
	Addr string
	// Advertised is the host:port clients are told to connect to; empty
	// is the listener's own address.
	Advertised string
	// TLS is the TLS configuration of an SSL or SASL_SSL listener, with
	// its certificate (or GetCertificate, to rotate it without a
	// restart); with ClientAuth, the client's certificate names its
	// principal on an SSL listener.
	TLS *tls.Config
}

// The principals of connections that have not authenticated: Kafka's
// KafkaPrincipal.ANONYMOUS.
const Anonymous = "User:ANONYMOUS"

// tlsPrincipal returns the principal an SSL connection's client
// certificate names ("User:" and its subject's distinguished name, as
// Kafka's DefaultKafkaPrincipalBuilder gives it with the DEFAULT
// ssl.principal.mapping.rules), or Anonymous without one.
func tlsPrincipal(st tls.ConnectionState) string {
	if len(st.PeerCertificates) == 0 {
		return Anonymous
	}
	return "User:" + st.PeerCertificates[0].Subject.String()
}
