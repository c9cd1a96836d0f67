package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/examples/internal/sasl"
)

// Security is how the broker's listeners protect themselves: which
// speaks TLS, which authenticates with SASL and with which mechanisms,
// the credentials to start with; and what each principal may do, the
// authorizer (authz.go). Kafka's names; see listenerSpecs for the
// listeners themselves.
type Security struct {
	// ProtocolMap maps listener names to security protocols
	// (listener.security.protocol.map, NAME:PROTOCOL,...); each protocol's
	// own name maps to itself, so "SASL_SSL://host:port" needs no entry.
	ProtocolMap string
	// InterBrokerListener names the listener the brokers of a cluster
	// use between them (inter.broker.listener.name): the one at this
	// broker's --cluster address. Empty is the first listener.
	InterBrokerListener string
	// SASLMechanisms lists the mechanisms SASL listeners offer
	// (sasl.enabled.mechanisms).
	SASLMechanisms []string
	// Keystore, Truststore and ClientAuth are the TLS listeners' PEM
	// files and whether they ask clients for certificates
	// (ssl.keystore.location, ssl.truststore.location, ssl.client.auth).
	Keystore, Truststore, ClientAuth string
	// FailedAuthDelay delays the answer to a failed authentication
	// (connection.failed.authentication.delay.ms).
	FailedAuthDelay time.Duration
	// ReauthMax is a SASL session's lifetime (connections.max.reauth.ms,
	// KIP-368); 0: for ever.
	ReauthMax time.Duration
	// AddScram gives SCRAM credentials to create at start when they do
	// not exist, in kafka-storage's --add-scram syntax:
	// 'SCRAM-SHA-256=[name=alice,password=alice-secret]', several
	// separated by ';'. Every broker of a cluster should be given the
	// same: the active controller commits each once, and keeps one that
	// exists (controller.CreateScram).
	AddScram string

	// Authorizer turns authorization on (authorizer.class.name): empty,
	// the default, authorizes nothing, so every request is allowed and
	// the ACL APIs answer SECURITY_DISABLED, as Kafka without an
	// authorizer; Kafka's StandardAuthorizer
	// (org.apache.kafka.metadata.authorizer.StandardAuthorizer), or
	// "acl" for short, checks every request against the ACL bindings of
	// the metadata log (package acl). Any other name is an error.
	Authorizer string
	// SuperUsers are the principals every check allows, whatever the
	// bindings say (super.users, separated by ';' as in Kafka:
	// "User:admin;User:CN=broker,O=example"). In a cluster it must hold
	// the principal the brokers reach each other as, which needs
	// CLUSTER_ACTION on the cluster: their certificate's subject over an
	// SSL inter-broker listener, User:ANONYMOUS over a PLAINTEXT one
	// (required then: a config without it is refused).
	SuperUsers string
	// AllowEveryoneIfNoACL allows an operation on a resource that no
	// binding applies to (allow.everyone.if.no.acl.found); false, the
	// default, leaves it to the super users.
	AllowEveryoneIfNoACL bool
}

// anonymous is the principal of a connection that did not authenticate
// (PLAINTEXT, or SSL without a client certificate): Kafka's
// KafkaPrincipal.ANONYMOUS.
const anonymous = "User:ANONYMOUS"

// authorizerOptions returns the options of the authorizer the settings
// ask for, and whether they ask for one; an error for a setting it cannot
// use.
func (c *Config) authorizerOptions() ([]acl.Option, bool, error) {
	opts, on, err := authz.Options(c.Authorizer, c.SuperUsers, c.AllowEveryoneIfNoACL)
	if !on || err != nil {
		return nil, false, err
	}
	if c.Cluster != "" && !slices.Contains(authz.SuperUsers(c.SuperUsers), anonymous) {
		if lns, err := c.listenerSpecs(); err == nil && interBroker(lns, c.InterBrokerListener).Protocol == kafkanet.Plaintext {
			return nil, false, fmt.Errorf("super.users: the brokers of a cluster reach each other over PLAINTEXT as %s, which needs CLUSTER_ACTION: list it "+
				"(every client of that listener is then a super user too: make the inter-broker listener SSL, and list the brokers' certificate principal instead)", anonymous)
		}
	}
	return opts, true, nil
}

func defaultSecurity() Security {
	return Security{SASLMechanisms: []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512},
		FailedAuthDelay: 100 * time.Millisecond}
}

// listenerSpecs reads listeners, advertised.listeners and the protocol
// map (kafkanet.ParseListeners).
func (c *Config) listenerSpecs() ([]kafkanet.ListenerConfig, error) {
	return kafkanet.ParseListeners(c.Listener, c.AdvertisedListener, c.ProtocolMap)
}

// scramBootstrap is one credential of AddScram.
type scramBootstrap struct {
	user, mechanism, password string
	iterations                int32
}

// parseAddScram reads AddScram: MECHANISM=[name=...,password=...(,iterations=N)];...
func parseAddScram(s string) ([]scramBootstrap, error) {
	var out []scramBootstrap
	for _, e := range strings.Split(s, ";") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		mech, body, ok := strings.Cut(e, "=")
		if !ok || !strings.HasPrefix(body, "[") || !strings.HasSuffix(body, "]") {
			return nil, fmt.Errorf("add-scram: %q: want MECHANISM=[name=...,password=...]", e)
		}
		b := scramBootstrap{mechanism: strings.ToUpper(mech)}
		if b.mechanism != sasl.ScramSHA256 && b.mechanism != sasl.ScramSHA512 {
			return nil, fmt.Errorf("add-scram: %q: the mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512", e)
		}
		for _, kv := range strings.Split(strings.Trim(body, "[]"), ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch strings.TrimSpace(k) {
			case "name":
				b.user = v
			case "password":
				b.password = v
			case "iterations":
				var n int32
				if _, err := fmt.Sscan(v, &n); err != nil || sasl.CheckIterations(n) != nil {
					return nil, fmt.Errorf("add-scram: %q: iterations must be between %d and %d", e, sasl.MinIterations, sasl.MaxIterations)
				}
				b.iterations = n
			default:
				return nil, fmt.Errorf("add-scram: %q: unknown key %q (name, password, iterations)", e, k)
			}
		}
		if b.user == "" || b.password == "" {
			return nil, fmt.Errorf("add-scram: %q: needs a name and a password", e)
		}
		out = append(out, b)
	}
	return out, nil
}

// validateSecurity checks the security settings against the listeners.
func (c *Config) validateSecurity() error {
	lns, err := c.listenerSpecs()
	if err != nil {
		return err
	}
	if len(lns) == 0 {
		return errors.New("listeners: empty")
	}
	var anyTLS, anySASL bool
	for _, l := range lns {
		anyTLS = anyTLS || l.Protocol.TLS()
		anySASL = anySASL || l.Protocol.SASL()
	}
	switch {
	case anyTLS && c.Keystore == "":
		return errors.New("ssl.keystore.location: a TLS listener (SSL, SASL_SSL) needs a certificate and its key")
	case anySASL && len(c.SASLMechanisms) == 0:
		return errors.New("sasl.enabled.mechanisms: empty, and a SASL listener needs one")
	case c.FailedAuthDelay < 0 || c.ReauthMax < 0:
		return errors.New("connection.failed.authentication.delay.ms and connections.max.reauth.ms must not be negative")
	case c.InterBrokerListener != "" && !slices.ContainsFunc(lns, func(l kafkanet.ListenerConfig) bool {
		return l.Name == strings.ToUpper(c.InterBrokerListener)
	}):
		return fmt.Errorf("inter.broker.listener.name: %s is not among the listeners", c.InterBrokerListener)
	case c.Cluster != "" && interBroker(lns, c.InterBrokerListener).Protocol.SASL():
		return errors.New("inter.broker.listener.name: the brokers of a cluster speak PLAINTEXT or SSL between them, not SASL, for now")
	case c.Cluster != "" && interBroker(lns, c.InterBrokerListener).Protocol == kafkanet.SSL && c.Truststore == "":
		return errors.New("ssl.truststore.location: the brokers of a cluster speaking SSL between them verify each other's certificates against it")
	}
	if _, err := parseAddScram(c.AddScram); err != nil {
		return err
	}
	if _, _, err := c.authorizerOptions(); err != nil {
		return err
	}
	if anySASL {
		if _, err := sasl.New(nil, c.SASLMechanisms...); err != nil {
			return err
		}
	}
	return nil
}

// interBroker returns the listener named name, or the first without a
// name: the one the brokers of a cluster use between them.
func interBroker(lns []kafkanet.ListenerConfig, name string) kafkanet.ListenerConfig {
	for _, l := range lns {
		if l.Name == strings.ToUpper(name) {
			return l
		}
	}
	return lns[0]
}

// securitySettings lists the security configs by their Kafka names.
func (c *Config) securitySettings() []setting {
	ms := time.Millisecond
	return []setting{
		stringSetting("listener.security.protocol.map", "listener names' security protocols, NAME:PROTOCOL,... (each protocol's name maps to itself)", &c.ProtocolMap),
		stringSetting("inter.broker.listener.name", "the listener the brokers of a cluster use between them (empty: the first)", &c.InterBrokerListener),
		stringListSetting("sasl.enabled.mechanisms", "the SASL mechanisms SASL listeners offer", &c.SASLMechanisms),
		stringSetting("ssl.keystore.location", "PEM file with the TLS listeners' certificate chain and private key (reloaded when replaced)", &c.Keystore),
		stringSetting("ssl.truststore.location", "PEM file with the CA certificates client certificates must be signed by", &c.Truststore),
		stringSetting("ssl.client.auth", "ask TLS clients for a certificate, whose subject is their principal: none, requested, required", &c.ClientAuth),
		durationSetting("connection.failed.authentication.delay.ms", "delay the answer to a failed authentication, then close the connection", &c.FailedAuthDelay, ms),
		durationSetting("connections.max.reauth.ms", "a SASL session's lifetime; the client authenticates again before it ends (0: for ever)", &c.ReauthMax, ms),
		stringSetting("add-scram", "SCRAM credentials created at start if absent: 'SCRAM-SHA-256=[name=alice,password=alice-secret]';... (as kafka-storage format --add-scram)", &c.AddScram),
		stringSetting("authorizer.class.name", "check every request against the ACLs: "+authz.StandardAuthorizer+" (or acl); empty: every request is allowed", &c.Authorizer),
		stringSetting("super.users", "principals the authorizer allows everything, separated by ';' (User:admin;User:CN=broker); a cluster's must list its brokers' (User:ANONYMOUS over a PLAINTEXT inter-broker listener)", &c.SuperUsers),
		boolSetting("allow.everyone.if.no.acl.found", "with an authorizer, allow an operation on a resource no ACL applies to", &c.AllowEveryoneIfNoACL),
	}
}
