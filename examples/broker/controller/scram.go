package controller

import (
	"context"
	"errors"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// ErrNoCredential is the error of a deletion of a credential that does
// not exist (Kafka's RESOURCE_NOT_FOUND).
var ErrNoCredential = errors.New("controller: attempt to delete a user credential that does not exist")

// AlterScram commits changes to users' SCRAM credentials in one record
// (Kafka's ScramControlManager): each user's changes apply together or
// not at all, and a user any of whose deletions names a credential that
// does not exist gets ErrNoCredential and keeps what it had. It returns
// the users refused, with why; the others' changes are committed when it
// returns without an error.
func (c *Controller) AlterScram(ctx context.Context, changes []metadata.ScramChange) (map[string]error, error) {
	refused := make(map[string]error)
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		clear(refused)
		for _, ch := range changes {
			if _, ok := im.Credential(ch.User, ch.Mechanism); ch.Credential == nil && !ok {
				refused[ch.User] = ErrNoCredential
			}
		}
		var rec metadata.Record
		for _, ch := range changes {
			if refused[ch.User] == nil {
				rec.Scram = append(rec.Scram, ch)
			}
		}
		return rec, nil
	})
	return refused, err
}

// CreateScram commits the credentials of changes whose user has none for
// their mechanism in the image it decides on, and leaves the others as
// they are; it returns how many it committed. It makes --add-scram's
// credentials, which every broker of a cluster is started with: each
// broker derives its own, with a salt of its own, from the image it has
// applied, which may not hold yet what another broker's controller
// committed; deciding here, on the active controller's image, makes each
// credential once, as Kafka commits kafka-storage format --add-scram's
// records once, with the bootstrap metadata of a new cluster. Every
// change must carry a credential.
func (c *Controller) CreateScram(ctx context.Context, changes []metadata.ScramChange) (int, error) {
	var rec metadata.Record
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		rec = metadata.Record{}
		for _, ch := range changes {
			if ch.Credential == nil {
				panic("controller: CreateScram of a change without a credential")
			}
			if _, ok := im.Credential(ch.User, ch.Mechanism); !ok {
				rec.Scram = append(rec.Scram, ch)
			}
		}
		return rec, nil
	})
	if err != nil {
		return 0, err
	}
	return len(rec.Scram), nil
}
