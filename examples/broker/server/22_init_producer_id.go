package server

// InitProducerId: v0-v5.
//
// Hands an idempotent producer (a null transactional id) a new producer id
// with epoch 0, every time it asks, as Kafka does for a producer without a
// transactional id: from v3 such a producer may send its current id and
// epoch to have its epoch bumped (KIP-360), and Kafka answers it with a new
// id instead, as here. Ids are unique for the broker's data: with log.dirs
// they are reserved on disk in blocks of 1000 (see producerIDs), so that a
// restarted broker never hands one out twice, and in a cluster each
// broker's ids lie in a range of their own (node id << 40); a block that
// cannot be
// reserved is COORDINATOR_NOT_AVAILABLE, which clients retry. Partitions
// track each id's sequences; see Produce.
//
// Not implemented: transactions. A non-null transactional id is refused
// with INVALID_REQUEST, which clients do not retry: the producer fails at
// once with an error that points at the broker (whose log says why),
// rather than retrying a coordinator that will never exist. An empty
// transactional id is INVALID_REQUEST in Kafka too. Idempotent-write ACLs.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

func init() { serve(kmsg.InitProducerID, 0, 5, (*Server).handleInitProducerID) }

func (s *Server) handleInitProducerID(r *kafkanet.Request) {
	req := r.Msg.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil {
		r.Logger().Warn("refused a transactional producer: this broker does not support transactions",
			zap.String("transactional_id", *req.TransactionalID))
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		r.Respond(resp)
		return
	}
	id, err := s.data.producerIDs.nextID()
	if err != nil {
		// The block of ids could not be reserved on disk: a retriable
		// error, as Kafka's when its controller cannot hand out a block.
		r.Logger().Error("could not reserve producer ids", zap.Error(err))
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		r.Respond(resp)
		return
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	r.Respond(resp)
}
