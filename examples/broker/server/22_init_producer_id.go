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
// A transactional id goes to its transaction coordinator (package txn,
// see txns.go): the broker that leads the id's partition of
// __transaction_state answers, others NOT_COORDINATOR, while loading
// COORDINATOR_LOAD_IN_PROGRESS. The coordinator hands the id its producer
// id with its epoch bumped, fencing the id's older producers, after aborting
// a transaction the id left open (CONCURRENT_TRANSACTIONS meanwhile, which
// the client retries); transaction_timeout_ms past
// transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT. An empty
// transactional id is INVALID_REQUEST, as in Kafka.
//
// Authorization (authz.go): WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); without one, as Kafka since
// KIP-679, IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (CLUSTER_AUTHORIZATION_FAILED).

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
		s.initTransactionalProducer(r, req, resp)
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

// initTransactionalProducer answers an InitProducerId naming a
// transactional id, from its transaction coordinator.
func (s *Server) initTransactionalProducer(r *kafkanet.Request, req *kmsg.InitProducerIDRequest, resp *kmsg.InitProducerIDResponse) {
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	id := *req.TransactionalID
	if id == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		r.Respond(resp)
		return
	}
	if err := s.txnTopic.KeyError(id); err != nil {
		resp.ErrorCode = err.Code
		r.Respond(resp)
		return
	}
	pid, epoch := int64(-1), int16(-1)
	if req.Version >= 3 {
		pid, epoch = req.ProducerID, req.ProducerEpoch
	}
	s.txns.InitProducerID(id, msDuration(req.TransactionTimeoutMillis), pid, epoch, func(pid int64, epoch int16, err *kerr.Error) {
		if err != nil {
			resp.ErrorCode = fencedCode(err.Code, req.Version, 4)
		} else {
			resp.ProducerID, resp.ProducerEpoch = pid, epoch
		}
		r.Respond(resp)
	})
}
