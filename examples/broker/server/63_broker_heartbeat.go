package server

// BrokerHeartbeat: v0-v2.
//
// A broker of the cluster tells the active controller it is alive
// (Kafka's BrokerHeartbeat, KIP-631): its session, a delayed operation in
// the controller's BrokerSession purgatory, is renewed, and a broker not
// registered at the epoch it gives (it restarted) or fenced (its session
// expired) is registered and unfenced first, as Kafka's
// BrokerRegistration and an unfencing heartbeat do together. The broker
// epoch is the broker's own incarnation (the time it started), not an
// offset the controller hands out. A broker that is not the active
// controller answers NOT_CONTROLLER.
//
// With want_shutdown (controlled shutdown), the broker is fenced at once:
// its leaderships move to the other replicas of their ISRs and it leaves
// every ISR while it still serves; should_shutdown says it may stop.
//
// The broker's listeners are registered by BrokerRegistration
// (62_broker_registration.go). is_caught_up says whether the broker's
// current_metadata_offset has reached the record that registered it again
// (always, for a broker registered already): a broker whose session
// lapsed leads again only on a heartbeat that says so (package cluster). Not implemented: want_fence,
// offline log dirs, and any check that the sender is a broker of the
// cluster.
//
// Authorization (authz.go): CLUSTER_ACTION on the cluster, the brokers',
// else CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.BrokerHeartbeat, 0, 2, (*Server).handleBrokerHeartbeat) }

func (s *Server) handleBrokerHeartbeat(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.BrokerHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	ctx, cancel := context.WithTimeout(context.Background(), controllerTimeout)
	defer cancel()
	if req.WantShutdown {
		if err := s.ctrl().Shutdown(ctx, req.BrokerID, req.BrokerEpoch); err != nil {
			resp.ErrorCode = alterPartitionCode(err)
		}
		resp.IsFenced, resp.ShouldShutdown = true, resp.ErrorCode == 0
	} else if index, err := s.ctrl().HeartbeatAt(ctx, req.BrokerID, req.BrokerEpoch); err != nil {
		resp.ErrorCode = alterPartitionCode(err)
		resp.IsFenced = true
	} else {
		resp.IsCaughtUp = req.CurrentMetadataOffset >= int64(index)
	}
	r.Respond(resp)
}
