package txn

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is a transactional id as DescribeTransactions shows it
// (KIP-664).
type Description struct {
	TxnID string
	// Err is TRANSACTIONAL_ID_NOT_FOUND (an id unknown, empty, or
	// expired: gone once its tombstone is written), NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE; the fields
	// below are zero then.
	Err           *kerr.Error
	State         State // State.String is Kafka's name of it
	ProducerID    int64
	ProducerEpoch int16
	Timeout       time.Duration
	// Started is when the transaction began (the last one, for an id
	// CompleteCommit or CompleteAbort); zero if none did since the
	// producer's InitProducerID (the wire's -1).
	Started    time.Time
	Partitions []TopicPartition // in the transaction, by topic and partition
}

// Describe describes each id of txnIDs, in order, as the log says it is
// (Kafka's handleDescribeTransactions): a transition being written is not
// shown until it is. O(ids + their partitions).
func (c *Coordinator) Describe(txnIDs []string) []Description {
	out := make([]Description, len(txnIDs))
	for i, id := range txnIDs {
		out[i] = c.describe(id)
	}
	return out
}

func (c *Coordinator) describe(id string) Description {
	d := Description{TxnID: id}
	if id == "" {
		d.Err = kerr.TransactionalIDNotFound
		return d
	}
	t, err := c.lockTxn(id)
	if t == nil {
		if err == nil {
			err = kerr.TransactionalIDNotFound
		}
		d.Err = err
		return d
	}
	defer t.mu.Unlock()
	m := &t.meta
	d.State, d.ProducerID, d.ProducerEpoch = m.state, m.pid, m.epoch
	d.Timeout = time.Duration(m.timeoutMs) * time.Millisecond
	if m.start != noTimestamp {
		d.Started = time.UnixMilli(m.start)
	}
	d.Partitions = m.parts.sorted()
	return d
}

// Listing is a transactional id as ListTransactions shows it (KIP-664).
type Listing struct {
	TxnID      string
	ProducerID int64
	State      State // State.String is Kafka's name of it
}

// List lists the transactional ids this broker coordinates, by id (Kafka's
// listTransactionStates): those in one of states (Kafka's names; none: any
// state), of one of producerIDs (none: any), and, when minDuration is not
// negative (KIP-994's DurationFilter), whose transaction has run longer
// than minDuration (Kafka's filter lets an id with no transaction through
// too). It also returns the names in states Kafka does not know, which the
// response lists as unknown filters. O(ids here).
func (c *Coordinator) List(states []string, producerIDs []int64, minDuration time.Duration) (listings []Listing, unknownStates []string) {
	want := make(map[State]bool, len(states))
	for _, name := range states {
		if s, ok := ParseState(name); ok {
			want[s] = true
		} else {
			unknownStates = append(unknownStates, name)
		}
	}
	if c.closed.Load() {
		return nil, unknownStates
	}
	c.mu.Lock()
	ts := slices.Collect(maps.Values(c.txns))
	c.mu.Unlock()
	now := c.nowMs()
	for _, t := range ts {
		t.mu.Lock()
		m := t.meta
		skip := t.gone || m.state == Dead ||
			(len(producerIDs) > 0 && !slices.Contains(producerIDs, m.pid)) ||
			(len(states) > 0 && !want[m.state]) ||
			(minDuration >= 0 && now-m.start <= minDuration.Milliseconds())
		t.mu.Unlock()
		if !skip {
			listings = append(listings, Listing{TxnID: t.id, ProducerID: m.pid, State: m.state})
		}
	}
	slices.SortFunc(listings, func(x, y Listing) int { return cmp.Compare(x.TxnID, y.TxnID) })
	return listings, unknownStates
}
