package server

// FindCoordinator: v0-v6.
//
// A group key (type 0, the only type before v1) is answered with the
// leader of the group's partition of the offsets topic
// (coordinator.PartitionFor): its node id, host and port. The topic is created
// first if it does not exist, as Kafka does; until it exists, or while the
// partition has no leader or its leader is not a broker this one knows,
// the key is answered COORDINATOR_NOT_AVAILABLE, which clients retry. The
// leader may still be loading the partition: it answers the group's
// requests COORDINATOR_LOAD_IN_PROGRESS until it is done
// (package coordinator), and any other broker answers them
// NOT_COORDINATOR. A transactional id (type 1) is answered alike from
// __transaction_state, the transaction coordinator's topic (package txn).
// A share key (type 2, KIP-932: "groupId:topicId:partition", which share
// partitions' leaders look up) is answered alike from
// __share_group_state, the share coordinator's topic (package
// sharestate); it needs CLUSTER_ACTION, as Kafka checks it
// (CLUSTER_AUTHORIZATION_FAILED). v4+ batches keys (KIP-699), each
// answered on its own. Unknown types are answered INVALID_REQUEST, as
// Kafka answers them. A key the client may not DESCRIBE (a group, a
// transactional id) is GROUP_AUTHORIZATION_FAILED or
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (authz.go).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/internal/acl"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.FindCoordinator, 0, 6, (*Server).handleFindCoordinator) }

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

func (s *Server) handleFindCoordinator(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	var (
		state    *coordinator.Topic
		topic    *metadata.Topic
		topicErr error
	)
	switch req.CoordinatorType {
	case coordinatorGroup:
		state = s.offsets
	case coordinatorTransaction:
		state = s.txnTopic
	case coordinatorShare:
		state = s.shareStateTopic
	}
	if state != nil {
		if topicErr = state.Ensure(); topicErr == nil {
			topic, topicErr = s.image().Topic(state.Name())
		}
	}
	acc := s.access(r)
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		switch {
		case req.CoordinatorType == coordinatorGroup && !acc.Allows(opDescribe, groupResource, key):
			c.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case req.CoordinatorType == coordinatorTransaction && !acc.Allows(opDescribe, txnResource, key):
			c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case req.CoordinatorType == coordinatorShare && !acc.Allows(opClusterAction, clusterRes, acl.ClusterName):
			c.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		case state != nil && topicErr != nil:
			c.ErrorCode = kerr.CoordinatorNotAvailable.Code
			c.ErrorMessage = errorMessage(topicErr)
		case state != nil:
			idx := coordinator.PartitionFor(key, len(topic.Partitions))
			leader, ok := s.brokers.Node(topic.Partitions[idx].Leader)
			if !ok {
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				c.ErrorMessage = nilIfEmpty(fmt.Sprintf("partition %d of %s has no leader", idx, state.Name()))
				break
			}
			host, port, ok := s.endpoint(r, leader)
			if !ok {
				c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				c.ErrorMessage = nilIfEmpty(fmt.Sprintf("broker %d has not registered this listener yet", leader.ID))
				break
			}
			c.NodeID, c.Host, c.Port = leader.ID, host, port
		default:
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = nilIfEmpty("unsupported coordinator type")
		}
		if c.ErrorCode != 0 {
			c.NodeID, c.Port = -1, -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if req.Version < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	r.Respond(resp)
}
