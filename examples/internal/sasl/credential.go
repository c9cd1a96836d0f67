package sasl

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
)

// The mechanisms' names, as SaslHandshake gives them.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Kafka's bounds on a SCRAM credential's iterations (ScramMechanism).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// Credential is a user's SCRAM credential for one mechanism, as Kafka
// stores it: what a server needs to check a client's proof and prove
// itself back, from which the password cannot be had.
type Credential struct {
	Mechanism  string `json:"mechanism"`
	Salt       []byte `json:"salt"`
	Iterations int32  `json:"iterations"`
	StoredKey  []byte `json:"stored_key"`
	ServerKey  []byte `json:"server_key"`
}

// Store looks up a user's credential for a SCRAM mechanism.
type Store interface {
	Credential(user, mechanism string) (Credential, bool)
}

// ErrMechanism is the error for a mechanism this package does not have.
var ErrMechanism = errors.New("unsupported SASL mechanism")

// hashOf returns mechanism's hash function.
func hashOf(mechanism string) (func() hash.Hash, error) {
	switch mechanism {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrMechanism, mechanism)
}

// CheckIterations returns an error unless n is within Kafka's bounds.
func CheckIterations(n int32) error {
	if n < MinIterations || n > MaxIterations {
		return fmt.Errorf("iterations %d: must be between %d and %d", n, MinIterations, MaxIterations)
	}
	return nil
}

// NewCredential derives mechanism's credential for password with a fresh
// random salt, at iterations (0: MinIterations). The password is used as
// its UTF-8 bytes, as Kafka's ScramFormatter does (no SASLprep).
func NewCredential(mechanism, password string, iterations int32) (Credential, error) {
	if iterations == 0 {
		iterations = MinIterations
	}
	h, err := hashOf(mechanism)
	if err != nil {
		return Credential{}, err
	}
	salt := make([]byte, 32)
	_, _ = rand.Read(salt) // never fails (crypto/rand)
	salted, err := pbkdf2.Key(h, password, salt, int(iterations), h().Size())
	if err != nil {
		return Credential{}, err
	}
	return FromSalted(mechanism, salt, salted, iterations)
}

// FromSalted returns mechanism's credential from a salted password (what
// an AlterUserScramCredentials upsertion carries), its salt and
// iterations.
func FromSalted(mechanism string, salt, salted []byte, iterations int32) (Credential, error) {
	h, err := hashOf(mechanism)
	if err != nil {
		return Credential{}, err
	}
	if err := CheckIterations(iterations); err != nil {
		return Credential{}, err
	}
	if len(salt) == 0 || len(salted) == 0 {
		return Credential{}, errors.New("empty salt or salted password")
	}
	clientKey := mac(h, salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	return Credential{Mechanism: mechanism, Salt: salt, Iterations: iterations,
		StoredKey: sum.Sum(nil), ServerKey: mac(h, salted, "Server Key")}, nil
}

// matches reports whether password is the one c was derived from.
func (c Credential) matches(password string) bool {
	h, err := hashOf(c.Mechanism)
	if err != nil {
		return false
	}
	salted, err := pbkdf2.Key(h, password, c.Salt, int(c.Iterations), h().Size())
	if err != nil {
		return false
	}
	clientKey := mac(h, salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	return hmac.Equal(sum.Sum(nil), c.StoredKey)
}

func mac(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
