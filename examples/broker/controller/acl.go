package controller

import (
	"context"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
)

// CreateACLs commits bindings in one record (Kafka's
// AclControlManager.createAcls): each valid binding the image lacks is
// added; one it holds already, or one given twice, succeeds and is added
// once; an invalid one (acl.Binding.Validate) gets its error, whose
// acl.Code is INVALID_REQUEST, and is not added. It returns each
// binding's error, in the order given; the bindings without one are
// committed when it returns no error of its own.
func (c *Controller) CreateACLs(ctx context.Context, bindings []acl.Binding) ([]error, error) {
	errs := make([]error, len(bindings))
	for i, b := range bindings {
		errs[i] = b.Validate()
	}
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		var rec metadata.Record
		added := make(map[acl.Binding]bool)
		for i, b := range bindings {
			if errs[i] == nil && !im.HasACL(b) && !added[b] {
				added[b] = true
				rec.ACLs = append(rec.ACLs, metadata.ACLChange{Binding: b})
			}
		}
		return rec, nil
	})
	return errs, err
}

// ACLDeletion is what one DeleteAcls filter removed: its bindings, or the
// error that kept it from removing any.
type ACLDeletion struct {
	Bindings []acl.Binding
	Err      error
}

// DeleteACLs removes, in one record, the bindings each filter selects
// (Kafka's AclControlManager.deleteAcls). The matches are computed here,
// against the image the record follows, and the record names each
// binding, so that every broker removes exactly these, whatever its own
// authorizer holds. A binding two filters select is in both results and
// removed once; an invalid filter (acl.Filter.Validate) gets its error
// and removes nothing. It returns each filter's result, in the order
// given, committed when it returns no error of its own. O(filters ×
// bindings), as Kafka's scan.
func (c *Controller) DeleteACLs(ctx context.Context, filters []acl.Filter) ([]ACLDeletion, error) {
	out := make([]ACLDeletion, len(filters))
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		var rec metadata.Record
		removed := make(map[acl.Binding]bool)
		for i, f := range filters {
			out[i] = ACLDeletion{Err: f.Validate()}
			if out[i].Err != nil {
				continue
			}
			out[i].Bindings = im.MatchingACLs(f)
			for _, b := range out[i].Bindings {
				if !removed[b] {
					removed[b] = true
					rec.ACLs = append(rec.ACLs, metadata.ACLChange{Binding: b, Remove: true})
				}
			}
		}
		return rec, nil
	})
	return out, err
}
