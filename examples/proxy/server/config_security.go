package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/authz"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
	"github.com/gopurgatory/purgatory/examples/internal/sasl"
	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
	"github.com/gopurgatory/purgatory/examples/tlsfiles"
)

// Security is how the proxy protects both of its sides, with Kafka's
// names: its listener's (TLS, SASL against a users file: the proxy
// terminates its clients' security) and its connections upstream (the
// proxy authenticates as itself, one principal for every client: the
// upstream cluster's ACLs see the proxy).
type Security struct {
	// ProtocolMap maps the listener's name to its security protocol
	// (listener.security.protocol.map), as the broker's.
	ProtocolMap string
	// SASLMechanisms lists the mechanisms a SASL listener offers
	// (sasl.enabled.mechanisms).
	SASLMechanisms []string
	// UsersFile names the file of the users a SASL listener accepts, a
	// name=password line each (# comments), as Kafka's PLAIN JAAS
	// user_<name>="<password>" entries: their SCRAM credentials are
	// derived at start, and the passwords are not kept. Keep it private.
	UsersFile string
	// Keystore, Truststore and ClientAuth are a TLS listener's PEM files
	// and whether it asks clients for certificates (ssl.*).
	Keystore, Truststore, ClientAuth string
	// FailedAuthDelay and ReauthMax: connection.failed.authentication.delay.ms
	// and connections.max.reauth.ms, as the broker's.
	FailedAuthDelay, ReauthMax time.Duration

	// UpstreamProtocol is the security protocol of the connections to
	// the upstream brokers (upstream.security.protocol).
	UpstreamProtocol string
	// UpstreamMechanism, UpstreamUser and UpstreamPassword are the
	// proxy's SASL credentials upstream (upstream.sasl.mechanism,
	// .username, .password).
	UpstreamMechanism, UpstreamUser, UpstreamPassword string
	// UpstreamTruststore and UpstreamKeystore are the PEM files of TLS
	// upstream: the CAs the brokers' certificates are signed by (empty:
	// the system's), and the proxy's own certificate for mutual TLS.
	UpstreamTruststore, UpstreamKeystore string

	// Authorizer turns the authorization of each client on
	// (authorizer.class.name, the broker's names: Kafka's
	// org.apache.kafka.metadata.authorizer.StandardAuthorizer, or "acl"):
	// every request is checked against its client's principal with the
	// upstream cluster's ACL bindings, which the proxy reads as itself
	// (acls.go, authz.go). Empty, the default: every client may do what
	// the proxy's upstream principal may.
	Authorizer string
	// SuperUsers are the principals every check allows (super.users,
	// separated by ';'), the proxy's clients' principals: they are
	// allowed before the bindings are loaded too.
	SuperUsers string
	// AllowEveryoneIfNoACL allows an operation on a resource that no
	// binding applies to (allow.everyone.if.no.acl.found), once the
	// bindings are loaded.
	AllowEveryoneIfNoACL bool
	// ACLRefresh is how often the upstream bindings are read again
	// (acl.refresh.ms): how long a binding changed upstream may take to
	// apply at the proxy.
	ACLRefresh time.Duration
}

func defaultSecurity() Security {
	return Security{SASLMechanisms: []string{sasl.Plain, sasl.ScramSHA256, sasl.ScramSHA512},
		FailedAuthDelay: 100 * time.Millisecond, UpstreamProtocol: string(kafkanet.Plaintext), ACLRefresh: 10 * time.Second}
}

func (c *Config) registerSecurityFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.ProtocolMap, "listener.security.protocol.map", c.ProtocolMap, "the listener's name's security protocol, NAME:PROTOCOL (each protocol's name maps to itself)")
	fs.Func("sasl.enabled.mechanisms", "the SASL mechanisms a SASL listener offers (default "+strings.Join(c.SASLMechanisms, ",")+")", func(s string) error {
		c.SASLMechanisms = splitList(s)
		return nil
	})
	fs.StringVar(&c.UsersFile, "sasl.users.file", c.UsersFile, "file of the users a SASL listener accepts, name=password lines (their SCRAM credentials are derived at start)")
	fs.StringVar(&c.Keystore, "ssl.keystore.location", c.Keystore, "PEM file with the TLS listener's certificate chain and private key (reloaded when replaced)")
	fs.StringVar(&c.Truststore, "ssl.truststore.location", c.Truststore, "PEM file with the CA certificates client certificates must be signed by")
	fs.StringVar(&c.ClientAuth, "ssl.client.auth", c.ClientAuth, "ask TLS clients for a certificate: none, requested, required")
	fs.Var(msValue{&c.FailedAuthDelay}, "connection.failed.authentication.delay.ms", "delay the answer to a failed authentication, then close the connection")
	fs.Var(msValue{&c.ReauthMax}, "connections.max.reauth.ms", "a SASL session's lifetime; the client authenticates again before it ends (0: for ever)")
	fs.StringVar(&c.UpstreamProtocol, "upstream.security.protocol", c.UpstreamProtocol, "security protocol to the upstream brokers: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL")
	fs.StringVar(&c.UpstreamMechanism, "upstream.sasl.mechanism", c.UpstreamMechanism, "the proxy's SASL mechanism upstream: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512")
	fs.StringVar(&c.UpstreamUser, "upstream.sasl.username", c.UpstreamUser, "the proxy's SASL user upstream")
	fs.StringVar(&c.UpstreamPassword, "upstream.sasl.password", c.UpstreamPassword, "the proxy's SASL password upstream")
	fs.StringVar(&c.UpstreamTruststore, "upstream.ssl.truststore.location", c.UpstreamTruststore, "PEM file with the CAs of the upstream brokers' certificates (empty: the system's)")
	fs.StringVar(&c.UpstreamKeystore, "upstream.ssl.keystore.location", c.UpstreamKeystore, "PEM file with the proxy's certificate and key for mutual TLS upstream")
	fs.StringVar(&c.Authorizer, "authorizer.class.name", c.Authorizer, "check each client's requests against its principal with the upstream's ACLs: "+
		authz.StandardAuthorizer+" (or acl); empty: every client may do what the proxy's upstream principal may")
	fs.StringVar(&c.SuperUsers, "super.users", c.SuperUsers, "client principals the authorizer allows everything, separated by ';' (User:admin;User:ops)")
	fs.BoolVar(&c.AllowEveryoneIfNoACL, "allow.everyone.if.no.acl.found", c.AllowEveryoneIfNoACL, "with an authorizer, allow an operation on a resource no ACL applies to")
	fs.Var(msValue{&c.ACLRefresh}, "acl.refresh.ms", "how often the upstream's ACL bindings are read again")
}

// splitList splits a comma-separated list, spaces dropped.
func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// listener reads the proxy's one listener.
func (c *Config) listener() (kafkanet.ListenerConfig, error) {
	lns, err := kafkanet.ParseListeners(c.Listener, c.AdvertisedListener, c.ProtocolMap)
	switch {
	case err != nil:
		return kafkanet.ListenerConfig{}, err
	case len(lns) != 1:
		return kafkanet.ListenerConfig{}, fmt.Errorf("listeners: %q: the proxy has one listener", c.Listener)
	}
	return lns[0], nil
}

// validateSecurity checks the security settings, both sides.
func (c *Config) validateSecurity() error {
	ln, err := c.listener()
	if err != nil {
		return err
	}
	switch {
	case ln.Protocol.TLS() && c.Keystore == "":
		return errors.New("ssl.keystore.location: a TLS listener (SSL, SASL_SSL) needs a certificate and its key")
	case ln.Protocol.SASL() && c.UsersFile == "":
		return errors.New("sasl.users.file: a SASL listener needs the users it accepts")
	case c.FailedAuthDelay < 0 || c.ReauthMax < 0:
		return errors.New("connection.failed.authentication.delay.ms and connections.max.reauth.ms must not be negative")
	}
	if ln.Protocol.SASL() {
		if _, err := sasl.New(nil, c.SASLMechanisms...); err != nil {
			return err
		}
	}
	if _, _, err := authz.Options(c.Authorizer, c.SuperUsers, c.AllowEveryoneIfNoACL); err != nil {
		return err
	}
	if c.ACLRefresh <= 0 {
		return errors.New("acl.refresh.ms must be positive")
	}
	up, err := kafkanet.ParseSecurityProtocol(c.UpstreamProtocol)
	if err != nil {
		return fmt.Errorf("upstream.security.protocol: %w", err)
	}
	if up.SASL() {
		if _, err := c.upstreamMechanism(); err != nil {
			return err
		}
	}
	return nil
}

// upstreamMechanism is the proxy's SASL mechanism upstream, a franz-go
// client mechanism.
func (c *Config) upstreamMechanism() (kgosasl.Mechanism, error) {
	if c.UpstreamUser == "" || c.UpstreamPassword == "" {
		return nil, errors.New("upstream.sasl.username and upstream.sasl.password: needed by a SASL upstream")
	}
	a := scram.Auth{User: c.UpstreamUser, Pass: c.UpstreamPassword}
	switch strings.ToUpper(c.UpstreamMechanism) {
	case sasl.Plain:
		return plain.Auth{User: c.UpstreamUser, Pass: c.UpstreamPassword}.AsMechanism(), nil
	case sasl.ScramSHA256:
		return a.AsSha256Mechanism(), nil
	case sasl.ScramSHA512:
		return a.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("upstream.sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.UpstreamMechanism)
}

// upstreamTLS is the TLS configuration upstream, nil without TLS.
func (c *Config) upstreamTLS() (*tls.Config, error) {
	up, _ := kafkanet.ParseSecurityProtocol(c.UpstreamProtocol) // validated
	if !up.TLS() {
		return nil, nil
	}
	return tlsfiles.ClientConfig(tlsfiles.Files{Truststore: c.UpstreamTruststore, Keystore: c.UpstreamKeystore})
}

// users is a users file's SCRAM credentials, a sasl.Store.
type users map[[2]string]sasl.Credential

func (u users) Credential(user, mechanism string) (sasl.Credential, bool) {
	c, ok := u[[2]string{user, mechanism}]
	return c, ok
}

// loadUsers reads a users file and derives each user's SCRAM-SHA-256 and
// SCRAM-SHA-512 credentials.
func loadUsers(path string) (users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sasl.users.file: %w", err)
	}
	defer f.Close()
	out := users{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, password, ok := strings.Cut(line, "=")
		if name = strings.TrimSpace(name); !ok || name == "" || password == "" {
			return nil, fmt.Errorf("sasl.users.file %s: line %d: want name=password", path, n)
		}
		for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
			c, err := sasl.NewCredential(m, password, 0)
			if err != nil {
				return nil, err
			}
			out[[2]string{name, m}] = c
		}
	}
	return out, sc.Err()
}

// upstreamOptions are the upstream cluster's TLS and SASL options.
func (c *Config) upstreamOptions() ([]upstream.Option, error) {
	var opts []upstream.Option
	tc, err := c.upstreamTLS()
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, upstream.WithTLS(tc))
	}
	if up, _ := kafkanet.ParseSecurityProtocol(c.UpstreamProtocol); up.SASL() {
		m, err := c.upstreamMechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, upstream.WithSASL(m))
	}
	return opts, nil
}

// listenerSecurity returns the listener, with its TLS configuration, and
// the network layer's SASL option if it authenticates.
func (c *Config) listenerSecurity(log *zap.Logger) (kafkanet.ListenerConfig, []kafkanet.Option, error) {
	ln, err := c.listener()
	if err != nil {
		return ln, nil, err
	}
	var opts []kafkanet.Option
	if ln.Protocol.TLS() {
		if ln.TLS, err = tlsfiles.ServerConfig(tlsfiles.Files{Keystore: c.Keystore, Truststore: c.Truststore,
			ClientAuth: c.ClientAuth}, log); err != nil {
			return ln, nil, err
		}
	}
	if ln.Protocol.SASL() {
		us, err := loadUsers(c.UsersFile)
		if err != nil {
			return ln, nil, err
		}
		a, err := sasl.New(us, c.SASLMechanisms...)
		if err != nil {
			return ln, nil, err
		}
		opts = append(opts, kafkanet.WithSASL(a, c.FailedAuthDelay, c.ReauthMax))
	}
	return ln, opts, nil
}
