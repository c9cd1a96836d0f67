package server

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/examples/broker/txn"
	"github.com/gopurgatory/purgatory/examples/internal/kafkanet"
)

// KIP-890 part 1: a transactional batch that would open its producer's
// transaction in a partition (none is open there for the producer at its
// epoch) is appended only once the transaction's coordinator confirms that
// the partition is in the transaction (AddPartitionsToTxn v4+ with
// verify_only, or the coordinator's own state when it is this broker). A
// partition the coordinator was not told of is INVALID_TXN_STATE: appended,
// it would open a transaction that no marker ever ends, holding the
// partition's last stable offset back for ever (Kafka's hanging
// transactions). The coordinator answers such a partition
// TRANSACTION_ABORTABLE (Kafka 3.8+; KIP-890, and KIP-1050's abortable
// class of errors): the producer aborts its transaction and goes on. It
// is handed on to Produce v11+, whose clients know it, and answered
// INVALID_TXN_STATE to v10 and below, as Kafka's AddPartitionsToTxnManager
// maps it for them (its DEFAULT_ERROR operation). A coordinator that
// cannot be asked (moved, loading, unreachable) is NOT_ENOUGH_REPLICAS,
// whatever the version, which producers retry, as Kafka's
// ReplicaManager answers.
//
// A check at a coordinator on another broker is a request: the produce is
// answered from the goroutine its answer arrives on. The produces read
// after it on the same connection wait behind it (produceOrder), so that a
// producer's batches are appended in the order it sent them: its sequence
// numbers stay in order, as they would if the reader had waited.
//
// A marker landing between the check and the append (the coordinator
// aborting the transaction on its timeout) voids the check: the partition
// hands out a guard before the check, and the append under it is refused
// INVALID_TXN_STATE if a marker of the producer came since (Kafka's
// verification guard; storage.Partition.VerificationGuard).
//
// KIP-890 part 2: a Produce v12+ adds the partition to the transaction
// instead of asking (txn.Coordinator.AddPartitionsV2 here, else
// AddPartitionsToTxn v5 without verify_only), as Kafka's addPartition
// operation does whatever the transaction.version level: a version 2
// producer sends no AddPartitionsToTxn, and a version 1 producer's add
// is answered at once, with nothing written, since it added the
// partition itself. The add waits for the producer's previous
// transaction to complete, whose marker at the epoch the producer writes
// at now (its end bumped it) may land meanwhile: the add's guard survives
// that one, and is voided by a marker at a later epoch only
// (storage.Partition.AddGuard). Produce v11 and below are verified as
// above, so that a client of version 1 that forgot a partition is still
// told INVALID_TXN_STATE.

// verifyThenProduce checks the batches of r that would open a transaction
// and produces, then calls done.
func (s *Server) verifyThenProduce(r *kafkanet.Request, done func()) {
	req := r.Msg.(*kmsg.ProduceRequest)
	add := req.Version >= 12
	need := s.unverified(s.access(r), req, add)
	need.version = req.Version
	if len(need.parts) == 0 {
		s.produce(r, nil)
		done()
		return
	}
	s.checkTxn(*req.TransactionID, need, func(errs map[txn.TopicPartition]*kerr.Error) {
		s.produce(r, need.verified(errs))
		done()
	})
}

// checkTxn verifies v's partitions, or adds them (v.add), at the
// transaction's coordinator and calls then with what it answered for
// each, from any goroutine: a partition missing from the answer was not
// answered for (the coordinator could not be reached).
func (s *Server) checkTxn(txnID string, v toVerify, then func(map[txn.TopicPartition]*kerr.Error)) {
	if err := s.txnTopic.KeyError(txnID); err == nil {
		if !v.add {
			then(s.txns.VerifyPartitions(txnID, v.pid, v.epoch, v.parts))
			return
		}
		s.txns.AddPartitionsV2(txnID, v.pid, v.epoch, v.parts, func(err *kerr.Error) {
			errs := make(map[txn.TopicPartition]*kerr.Error, len(v.parts))
			for _, tp := range v.parts {
				errs[tp] = err
			}
			then(errs)
		})
		return
	}
	s.member.Go(func(ctx context.Context) { then(s.verifyRemote(ctx, txnID, v)) })
}

// verified is what a KIP-890 check found for a produce, by topic and
// partition index in the request: the error codes of the partitions it
// refused, and the guards of those it confirmed. Its methods answer for a
// nil one: nothing refused, no guard.
type verified struct {
	codes  map[[2]int]int16
	guards map[[2]int]uint64
}

func (v *verified) refused(at [2]int) int16 {
	if v == nil {
		return 0
	}
	return v.codes[at]
}

func (v *verified) guard(at [2]int) uint64 {
	if v == nil {
		return 0
	}
	return v.guards[at]
}

// toVerify is what a produce needs verified: the partitions whose batch
// would open a transaction of the producer, where they sit in the request.
type toVerify struct {
	add     bool  // KIP-890 part 2: add them rather than verify
	version int16 // the Produce's: which errors its client knows
	pid     int64
	epoch   int16
	parts   []txn.TopicPartition
	at      [][2]int // topic and partition index in the request, by parts
	guards  []uint64 // each partition's verification guard, taken before the check, by parts
}

// unverified returns the batches of req that would open a transaction in
// a partition this broker leads, to be added to the transaction with add.
// A batch that fails otherwise (not led here, malformed, a stale epoch, a
// topic the client may not write) is left to the append to refuse.
func (s *Server) unverified(c access, req *kmsg.ProduceRequest, add bool) toVerify {
	need := toVerify{add: add}
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		topic, err := s.data.store.Topic(rt.Topic)
		if req.Version >= 13 {
			topic, err = s.data.store.TopicByID(rt.TopicID)
		}
		if err != nil || !c.Sees(opWrite, topicResource, topic.Name) {
			continue
		}
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			pid, epoch, ok := storage.TransactionalProducer(rp.Records)
			if !ok {
				continue
			}
			p, err := topic.Partition(rp.Partition)
			if err != nil || s.replicas.Leads(p) != nil {
				continue
			}
			if _, openEpoch, open := p.OngoingTxn(pid); open && openEpoch == epoch {
				continue // its transaction is open here: it was verified
			}
			need.pid, need.epoch = pid, epoch
			need.parts = append(need.parts, txn.TopicPartition{Topic: topic.Name, Partition: rp.Partition})
			need.at = append(need.at, [2]int{ti, pi})
			// Taken before the check: see storage.
			if add {
				need.guards = append(need.guards, p.AddGuard(pid, epoch))
			} else {
				need.guards = append(need.guards, p.VerificationGuard(pid))
			}

		}
	}
	return need
}

// verified maps the coordinator's answers to the produce's: a partition
// in the transaction is appended under its guard; the coordinator's
// fencing and state errors refuse it as Kafka's produce answers them,
// and a partition not in the transaction (TRANSACTION_ABORTABLE) as the
// produce's version allows (abortable); anything else (the coordinator
// moved, loading, unreachable) refuses it NOT_ENOUGH_REPLICAS, which the
// producer retries.
func (v toVerify) verified(errs map[txn.TopicPartition]*kerr.Error) *verified {
	out := &verified{codes: make(map[[2]int]int16), guards: make(map[[2]int]uint64)}
	for i, tp := range v.parts {
		err, answered := errs[tp]
		switch {
		case answered && err == nil:
			out.guards[v.at[i]] = v.guards[i]
		case err == kerr.InvalidTxnState, err == kerr.InvalidProducerIDMapping, err == kerr.InvalidProducerEpoch:
			out.codes[v.at[i]] = err.Code
		case err == kerr.ProducerFenced:
			out.codes[v.at[i]] = kerr.InvalidProducerEpoch.Code // what a produce answers a fenced producer
		case err == kerr.TransactionAbortable:
			out.codes[v.at[i]] = abortable(v.version)
		default:
			out.codes[v.at[i]] = kerr.NotEnoughReplicas.Code
		}
	}
	return out
}

// abortable is what a Produce of version answers for a partition its
// coordinator answered TRANSACTION_ABORTABLE: that, from v11 (KIP-890
// added it to the produce's errors), and INVALID_TXN_STATE before, which
// is what older clients were told of a partition not in the transaction.
func abortable(version int16) int16 {
	if version >= 11 {
		return kerr.TransactionAbortable.Code
	}
	return kerr.InvalidTxnState.Code
}

// verifyRemote asks the transaction's coordinator, on another broker,
// whether v's partitions are in the transaction (AddPartitionsToTxn v4
// with verify_only), or has it add them (v5 without, for v.add). An error
// reaching it is an answer for none.
func (s *Server) verifyRemote(ctx context.Context, txnID string, v toVerify) map[txn.TopicPartition]*kerr.Error {
	t, err := s.image().Topic(coordinator.TransactionTopic)
	if err != nil {
		return nil
	}
	node := t.Partitions[coordinator.PartitionFor(txnID, len(t.Partitions))].Leader
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(4)
	if v.add {
		req.SetVersion(5)
	}
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = txnID, v.pid, v.epoch, !v.add
	byTopic := make(map[string]int)
	for _, tp := range v.parts {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(tr.Topics)
			byTopic[tp.Topic] = i
			tr.Topics = append(tr.Topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: tp.Topic})
		}
		tr.Topics[i].Partitions = append(tr.Topics[i].Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, tr)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TransactionMarkerTimeout)
	defer cancel()
	resp, err := s.member.RequestOn(ctx, cluster.Transactions, node, req) // not behind a follower's fetches: see cluster.Channel
	if err != nil {
		return nil
	}
	out := make(map[txn.TopicPartition]*kerr.Error)
	for _, rt := range resp.(*kmsg.AddPartitionsToTxnResponse).Transactions {
		for _, topic := range rt.Topics {
			for _, p := range topic.Partitions {
				var ke *kerr.Error
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					errors.As(err, &ke)
				}
				out[txn.TopicPartition{Topic: topic.Topic, Partition: p.Partition}] = ke
			}
		}
	}
	return out
}

// connOrder runs the produces of a connection in the order it read them
// once one of them waits for a coordinator on another broker: the ones
// read meanwhile queue behind it. A connection with nothing waiting has no
// entry, so that a produce outside transactions costs one lock-free
// lookup.
type connOrder struct {
	m sync.Map // *kafkanet.Conn → *connQueue
}

// connQueue is the produces of one connection waiting their turn.
type connQueue struct {
	mu   sync.Mutex
	busy bool                // a produce of the connection runs, or waits for its check
	fns  []func(done func()) // the produces read after it, in order
	dead bool                // drained and removed from the map: look again
}

// queued reports whether produces of c are waiting: a new one must queue.
func (o *connOrder) queued(c *kafkanet.Conn) bool {
	_, ok := o.m.Load(c)
	return ok
}

// run runs f, or queues it behind the produces of c that are waiting. f
// calls done when it has answered (or handed its answer to a purgatory),
// on any goroutine; the next produce of c then runs there. Calls for one
// connection come from its reader, one at a time.
func (o *connOrder) run(c *kafkanet.Conn, f func(done func())) {
	for {
		v, _ := o.m.LoadOrStore(c, &connQueue{})
		q := v.(*connQueue)
		q.mu.Lock()
		if q.dead {
			q.mu.Unlock()
			continue
		}
		if q.busy {
			q.fns = append(q.fns, f)
			q.mu.Unlock()
			return
		}
		q.busy = true
		q.mu.Unlock()
		o.drain(c, q, f)
		return
	}
}

// drain runs f and then the produces queued behind it, in order, for as
// long as each finishes at once; one that waits for its check continues
// the drain from the goroutine that finishes it.
func (o *connOrder) drain(c *kafkanet.Conn, q *connQueue, f func(done func())) {
	for f != nil {
		var (
			mu       sync.Mutex
			returned bool // f has returned: done must drain
			finished bool // done was called before f returned
		)
		f(func() {
			mu.Lock()
			if !returned {
				finished = true
				mu.Unlock()
				return
			}
			mu.Unlock()
			if next := o.next(c, q); next != nil {
				o.drain(c, q, next)
			}
		})
		mu.Lock()
		returned = true
		now := finished
		mu.Unlock()
		if !now {
			return // done drains when it is called
		}
		f = o.next(c, q)
	}
}

// next takes the next produce queued on c, or, with none, retires the
// queue: the next produce of c runs without it.
func (o *connOrder) next(c *kafkanet.Conn, q *connQueue) func(done func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.fns) == 0 {
		q.busy, q.dead = false, true
		o.m.CompareAndDelete(c, q)
		return nil
	}
	f := q.fns[0]
	q.fns = q.fns[1:]
	return f
}
