package cluster

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// register sends this broker's endpoints to the active controller (a
// BrokerRegistration, or its own controller when it leads the quorum)
// unless the image it has applied holds them already: each heartbeat
// calls it, so a registration lost with a controller is sent again to the
// next. The answer is not waited for beyond the heartbeat's context.
func (ps *peers) register(ctx context.Context, leader int32, self bool) error {
	m := ps.m
	eps := m.cfg.Endpoints
	if len(eps) == 0 || slices.Equal(m.Image().Endpoints(m.brokers.self), eps) {
		return nil
	}
	if self {
		return m.ctrl.RegisterEndpoints(ctx, m.brokers.self, eps)
	}
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = m.brokers.self, m.cfg.ClusterID
	for _, e := range eps {
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port = e.Listener, e.Host, uint16(e.Port)
		l.SecurityProtocol = kafkanet.SecurityProtocol(e.Protocol).ID()
		req.Listeners = append(req.Listeners, l)
	}
	resp, err := ps.request(ctx, leader, req)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.(*kmsg.BrokerRegistrationResponse).ErrorCode)
}
