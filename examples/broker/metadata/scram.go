package metadata

import (
	"maps"
	"slices"
	"strings"

	"github.com/gopurgatory/purgatory/examples/internal/sasl"
)

// ScramChange sets or removes a user's SCRAM credential for one mechanism
// (Kafka's UserScramCredentialRecord and RemoveUserScramCredentialRecord).
type ScramChange struct {
	User      string `json:"user"`
	Mechanism string `json:"mechanism"`
	// Credential is the new credential; nil removes the user's
	// credential for Mechanism.
	Credential *sasl.Credential `json:"credential,omitempty"`
}

// ScramUser is a user's credentials, by mechanism.
type ScramUser struct {
	User        string
	Credentials []sasl.Credential // by mechanism's name
}

type scramKey struct{ user, mechanism string }

// Credential returns user's credential for mechanism: the image is the
// broker's SCRAM credential store (sasl.Store).
func (im *Image) Credential(user, mechanism string) (sasl.Credential, bool) {
	c, ok := im.scram[scramKey{user, mechanism}]
	return c, ok
}

// ScramUsers returns every user with a credential, by name.
func (im *Image) ScramUsers() []ScramUser {
	byUser := make(map[string][]sasl.Credential)
	for k, c := range im.scram {
		byUser[k.user] = append(byUser[k.user], c)
	}
	out := make([]ScramUser, 0, len(byUser))
	for u, cs := range byUser {
		slices.SortFunc(cs, func(a, b sasl.Credential) int { return strings.Compare(a.Mechanism, b.Mechanism) })
		out = append(out, ScramUser{User: u, Credentials: cs})
	}
	slices.SortFunc(out, func(a, b ScramUser) int { return strings.Compare(a.User, b.User) })
	return out
}

// applyScram applies changes to the image's credentials, copying them
// first: images share their credentials until one changes them, so that
// the records that change nothing of them (most) copy nothing.
func (im *Image) applyScram(changes []ScramChange) {
	if len(changes) == 0 {
		return
	}
	im.scram = maps.Clone(im.scram)
	if im.scram == nil {
		im.scram = make(map[scramKey]sasl.Credential)
	}
	for _, c := range changes {
		k := scramKey{c.User, c.Mechanism}
		if c.Credential == nil {
			delete(im.scram, k)
		} else {
			im.scram[k] = *c.Credential
		}
	}
}

// scramEntries returns the credentials as a snapshot holds them.
func (im *Image) scramEntries() []ScramChange {
	out := make([]ScramChange, 0, len(im.scram))
	for _, u := range im.ScramUsers() {
		for _, c := range u.Credentials {
			out = append(out, ScramChange{User: u.User, Mechanism: c.Mechanism, Credential: &c})
		}
	}
	return out
}
