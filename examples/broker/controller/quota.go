package controller

import (
	"context"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// AlterQuotas decides an AlterClientQuotas request (Kafka's
// ClientQuotaControlManager, see metadata.AlterQuotas) and commits its
// changes in one record, unless validateOnly, when it commits nothing.
// It returns each entry's entity and error, in the order given; the
// entries without an error are committed when it returns no error of its
// own. Only the active controller decides, validating too.
func (c *Controller) AlterQuotas(ctx context.Context, alts []metadata.QuotaAlteration, validateOnly bool) ([]metadata.QuotaEntity, []error, error) {
	var (
		entities []metadata.QuotaEntity
		errs     []error
	)
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		var rec metadata.Record
		rec, entities, errs = metadata.AlterQuotas(im, alts)
		if validateOnly {
			return metadata.Record{}, nil
		}
		return rec, nil
	})
	return entities, errs, err
}
