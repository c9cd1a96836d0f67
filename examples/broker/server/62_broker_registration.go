package server

// BrokerRegistration: v0 and up, as kmsg knows them.
//
// A broker of the cluster registers its listeners with the active
// controller (Kafka's BrokerRegistration, KIP-631), which commits them to
// the metadata log as the broker's endpoints: Metadata and
// FindCoordinator, asked on a listener name, give each broker at its own
// endpoint of that name, so that a cluster serves clients on listeners
// other than the one its brokers use between them. The registration
// itself (epoch, fencing) is BrokerHeartbeat's here; the broker epoch
// answered is -1 (the broker chose its own). A broker id not in the
// cluster's --cluster list is INVALID_REGISTRATION (a cluster's brokers
// are fixed here), and a broker that is not the active controller answers
// NOT_CONTROLLER.
//
// Not implemented: features, racks, log dirs, the incarnation id's
// checks.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.BrokerRegistration, 0, 4, (*Server).handleBrokerRegistration) }

func (s *Server) handleBrokerRegistration(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.BrokerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	eps := make([]metadata.Endpoint, 0, len(req.Listeners))
	for _, l := range req.Listeners {
		eps = append(eps, metadata.Endpoint{Listener: l.Name, Host: l.Host, Port: int32(l.Port),
			Protocol: kafkanet.SecurityProtocolName(l.SecurityProtocol)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	defer cancel()
	switch err := s.ctrl().RegisterEndpoints(ctx, req.BrokerID, eps); {
	case err == nil:
	case errors.Is(err, controller.ErrUnknownBroker):
		resp.ErrorCode = kerr.InvalidRegistration.Code
	default:
		resp.ErrorCode = alterPartitionCode(err)
	}
	r.Respond(resp)
}
