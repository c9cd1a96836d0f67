package controller

import (
	"context"
	"slices"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
)

// RegisterEndpoints commits broker's endpoints (its listeners, Kafka's
// BrokerRegistration), unless the image has them already: a broker sends
// them until it sees them, and a second registration changes nothing.
// ErrNotController on a broker that is not the active controller.
func (c *Controller) RegisterEndpoints(ctx context.Context, broker int32, eps []metadata.Endpoint) error {
	_, err := c.decide(ctx, func(im *metadata.Image) (metadata.Record, error) {
		if !c.isBroker(broker) {
			return metadata.Record{}, ErrUnknownBroker
		}
		if slices.Equal(im.Endpoints(broker), eps) {
			return metadata.Record{}, nil
		}
		return metadata.Record{Endpoints: []metadata.BrokerEndpoints{{Broker: broker, Endpoints: eps}}}, nil
	})
	return err
}
