package sasl

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/xdg-go/scram"
)

// ErrAuthentication is the error of a failed authentication: unknown user,
// wrong password, or a malformed exchange. Its message never says which,
// as Kafka's does not, so that a client cannot probe for user names.
var ErrAuthentication = errors.New("authentication failed: invalid credentials")

// Exchange is one connection's authentication: the client's messages in,
// the server's out, until done. Principal is the authenticated
// principal ("User:alice") once Step reported done without an error.
type Exchange interface {
	Step(in []byte) (out []byte, done bool, err error)
	Principal() string
}

// Authenticator starts exchanges of the mechanisms it is given against a
// Store.
type Authenticator struct {
	mechanisms []string // immutable
	store      Store
	scram      map[string]*scram.Server // by mechanism; immutable
	// plainSlots bounds the PLAIN checks running at once: each costs a
	// PBKDF2 at the credential's iterations (a millisecond or more), so
	// a flood of PLAIN attempts from many connections takes at most half
	// the cores, never the broker.
	plainSlots chan struct{}
}

// New returns an authenticator of mechanisms (Plain, ScramSHA256,
// ScramSHA512: sasl.enabled.mechanisms) against store.
func New(store Store, mechanisms ...string) (*Authenticator, error) {
	if len(mechanisms) == 0 {
		return nil, errors.New("sasl.enabled.mechanisms: empty")
	}
	a := &Authenticator{mechanisms: slices.Clone(mechanisms), store: store, scram: make(map[string]*scram.Server),
		plainSlots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
	for _, m := range mechanisms {
		switch m {
		case Plain:
		case ScramSHA256, ScramSHA512:
			gen := scram.SHA256
			if m == ScramSHA512 {
				gen = scram.SHA512
			}
			srv, err := gen.NewServer(a.lookup(m))
			if err != nil {
				return nil, err
			}
			a.scram[m] = srv
		default:
			return nil, fmt.Errorf("sasl.enabled.mechanisms: %w: %q (have %s, %s, %s)", ErrMechanism, m, Plain, ScramSHA256, ScramSHA512)
		}
	}
	return a, nil
}

// Mechanisms returns the mechanisms enabled, in the order given.
func (a *Authenticator) Mechanisms() []string { return slices.Clone(a.mechanisms) }

// Start begins an exchange of mechanism; an error if it is not enabled.
func (a *Authenticator) Start(mechanism string) (Exchange, error) {
	if !slices.Contains(a.mechanisms, mechanism) {
		return nil, fmt.Errorf("%w: %q is not enabled (sasl.enabled.mechanisms: %v)", ErrMechanism, mechanism, a.mechanisms)
	}
	if mechanism == Plain {
		return &plainExchange{store: a.store, slots: a.plainSlots}, nil
	}
	return &scramExchange{conv: a.scram[mechanism].NewConversation()}, nil
}

// lookup is the SCRAM library's view of the store for mechanism.
func (a *Authenticator) lookup(mechanism string) scram.CredentialLookup {
	return func(user string) (scram.StoredCredentials, error) {
		c, ok := a.store.Credential(user, mechanism)
		if !ok {
			return scram.StoredCredentials{}, ErrAuthentication
		}
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(c.Salt), Iters: int(c.Iterations)},
			StoredKey: c.StoredKey, ServerKey: c.ServerKey}, nil
	}
}

// scramExchange is a SCRAM conversation: the client's first message, the
// server's; the client's proof, the server's signature.
type scramExchange struct {
	conv      *scram.ServerConversation
	principal string
}

func (e *scramExchange) Step(in []byte) ([]byte, bool, error) {
	out, err := e.conv.Step(string(in))
	if err != nil {
		return nil, true, ErrAuthentication
	}
	if !e.conv.Done() {
		return []byte(out), false, nil
	}
	if !e.conv.Valid() {
		return nil, true, ErrAuthentication
	}
	if id := e.conv.AuthzID(); id != "" && id != e.conv.Username() {
		// Kafka: an authorization id other than the user is refused.
		return nil, true, ErrAuthentication
	}
	e.principal = "User:" + e.conv.Username()
	return []byte(out), true, nil
}

func (e *scramExchange) Principal() string { return e.principal }

// plainExchange is PLAIN's one message: authzid NUL user NUL password.
type plainExchange struct {
	store     Store
	slots     chan struct{} // the Authenticator's plainSlots
	principal string
}

func (e *plainExchange) Step(in []byte) ([]byte, bool, error) {
	parts := bytes.Split(in, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 {
		return nil, true, ErrAuthentication
	}
	authz, user, password := string(parts[0]), string(parts[1]), string(parts[2])
	if authz != "" && authz != user {
		return nil, true, ErrAuthentication
	}
	for _, m := range []string{ScramSHA512, ScramSHA256} {
		if c, ok := e.store.Credential(user, m); ok {
			e.slots <- struct{}{} // waits while half the cores check passwords
			matches := c.matches(password)
			<-e.slots
			if !matches {
				return nil, true, ErrAuthentication
			}
			e.principal = "User:" + user
			return nil, true, nil
		}
	}
	return nil, true, ErrAuthentication
}

func (e *plainExchange) Principal() string { return e.principal }
