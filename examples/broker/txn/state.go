package txn

import (
	"cmp"
	"maps"
	"math"
	"slices"
)

// State is a transactional id's state (Kafka's TransactionState). Its
// values are the ids __transaction_state's records carry, and String is
// Kafka's name for it, as DescribeTransactions and ListTransactions show
// it.
type State int8

// The states, in Kafka's order (their ids in the records).
const (
	Empty             State = iota // no transaction: after InitProducerID, or once one completed long ago
	Ongoing                        // partitions added; neither committed nor aborted yet
	PrepareCommit                  // EndTxn(commit) written: its markers are being written
	PrepareAbort                   // an abort written (EndTxn, a fence, a timeout): its markers are being written
	CompleteCommit                 // every commit marker written
	CompleteAbort                  // every abort marker written
	Dead                           // expired: its tombstone is being written
	PrepareEpochFence              // fencing the producer of an Ongoing transaction; never written
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
	"Dead", "PrepareEpochFence"}

// String returns Kafka's name of s ("Ongoing", "CompleteCommit").
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return "Unknown"
	}
	return stateNames[s]
}

// ParseState returns the state Kafka names name, as ListTransactions'
// state filters name them; false for a name Kafka does not know.
func ParseState(name string) (State, bool) {
	i := slices.Index(stateNames[:], name)
	return State(i), i >= 0
}

// noProducerID and noEpoch are Kafka's RecordBatch.NO_PRODUCER_ID and
// NO_PRODUCER_EPOCH: none yet, or none remembered.
const (
	noProducerID = -1
	noEpoch      = -1
	noTimestamp  = -1
)

// epochExhausted reports whether a producer id's epochs are used up at e
// (Kafka's TransactionMetadata.isEpochExhausted): one is kept back so that
// a fence can still bump it.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// TopicPartition names a partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// partitions is the set of partitions in a transaction. A metadata's set
// is never modified once the metadata is made: a transition that adds
// partitions makes a new one.
type partitions map[TopicPartition]struct{}

func (ps partitions) sorted() []TopicPartition {
	return slices.SortedFunc(maps.Keys(ps), func(x, y TopicPartition) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
}

// with returns ps with add added (ps itself when it holds them all).
func (ps partitions) with(add []TopicPartition) partitions {
	var out partitions
	for _, tp := range add {
		if _, ok := ps[tp]; ok {
			continue
		}
		if out == nil {
			out = maps.Clone(ps)
			if out == nil {
				out = make(partitions, len(add))
			}
		}
		out[tp] = struct{}{}
	}
	if out == nil {
		return ps
	}
	return out
}

// metadata is a transactional id's state as Kafka's TransactionMetadata
// holds it, without its lock and pending state (the txn's): what its
// record says, and, in memory only as in Kafka's transaction version 1,
// the producer id and epoch before the last transition (KIP-360's retry
// of an InitProducerID whose answer was lost). A transaction version 2
// record keeps the last producer id too (end_v2.go).
type metadata struct {
	pid       int64
	lastPID   int64 // the producer id before the last transition; noProducerID after a load of a version 1 record
	epoch     int16 // noEpoch until the first InitProducerID is written
	lastEpoch int16 // the epoch a KIP-360 retry may still name; noEpoch: none
	timeoutMs int32
	state     State
	parts     partitions
	start     int64 // wall-clock ms the transaction started at; noTimestamp: none
	updated   int64 // wall-clock ms of the last transition
	// tv2 is set when the producer runs transaction version 2 (Kafka's
	// clientTransactionVersion): its partitions were added by its
	// produces, or it ended its last transaction with EndTxn v5. Every
	// end of its transactions bumps the epoch.
	tv2 bool
	// rotating is set on a transaction version 2 Prepare whose epochs are
	// exhausted: its Complete moves the id to producer id nextPID at epoch
	// 0 (Kafka's nextProducerId). Reset by every transition.
	rotating bool
	nextPID  int64
}

// transition returns m moved to state at now (Kafka's
// prepareTransitionTo): the last producer id is m's, no rotation is under
// way, everything else as m unless the caller changes it.
func (m metadata) transition(state State, now int64) metadata {
	next := m
	next.lastPID = m.pid
	next.state = state
	next.updated = now
	next.rotating, next.nextPID = false, 0
	return next
}
