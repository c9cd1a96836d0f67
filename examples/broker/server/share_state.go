package server

// Share partitions' state (KIP-932), kept by the share coordinator
// (package sharestate) on __share_group_state, and this broker's side of
// it as a share partitions' leader: the persister (Kafka's
// DefaultStatePersister and PersisterStateManager) that package share
// reads and writes its partitions' state through. The API files 83 to 87
// serve the coordinator's RPCs.
//
// The persister routes each call by the share partition's coordinator
// key (sharestate.Key.String): to the coordinator here when this broker
// leads the key's partition of __share_group_state and has loaded it, as
// a call (its answer a callback, the write's wait the runtime's delayed
// append); else as the RPC to the partition's leader, over this broker's
// inter-broker client of it that no replication waits behind (see
// cluster's peers: a write is answered once replicated), on a goroutine
// of the cluster member's. A call that finds no coordinator yet (the
// topic being created, its partition loading or without a leader, the
// leader unreachable) is tried again after shareStateBackoff, on the share
// timer, until shareStateDeadline has passed since it began: then its
// error is the answer (a load fails, and the next share fetch tries
// again; an acknowledgement is answered COORDINATOR_NOT_AVAILABLE).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/sharestate"
	"github.com/gopurgatory/purgatory/timer"
)

const (
	shareStateBackoff  = 100 * time.Millisecond
	shareStateDeadline = 15 * time.Second
)

// newShareStateCoordinator builds the share coordinator from the
// broker's configs, hosted by s's runtime on __share_group_state, which it
// returns too.
func (s *Server) newShareStateCoordinator() (*sharestate.Coordinator, *coordinator.Topic, error) {
	cfg := s.cfg
	return sharestate.Host(s.coords, sharestate.ServiceConfig{
		Partitions: cfg.ShareStateTopicPartitions, ReplicationFactor: cfg.ShareStateTopicRF,
		MinISR: cfg.ShareStateTopicMinISR, AppendTimeout: cfg.OffsetsCommitTimeout,
		CompactionDeadRecords: cfg.OffsetsCompactionDeadRecords,
	}, sharestate.Config{Logger: s.log.Named("sharestate")})
}

// sharePersister is package share's Persister on this broker.
type sharePersister struct {
	s     *Server
	timer *timer.Timer // the retries' backoff

	mu      sync.Mutex // guards the following; a leaf
	waiting map[*stateCall]struct{}
}

// close answers the calls waiting to be tried again, whose tasks the
// share timer dropped as it closed: COORDINATOR_NOT_AVAILABLE.
func (ps *sharePersister) close() {
	ps.mu.Lock()
	calls := ps.waiting
	ps.waiting = nil
	ps.mu.Unlock()
	for c := range calls {
		c.done(fmt.Errorf("%w: the broker is closing", kerr.CoordinatorNotAvailable))
	}
}

var _ share.Persister = (*sharePersister)(nil)

func stateKey(k share.Key) sharestate.Key {
	return sharestate.Key{Group: k.Group, Topic: k.Topic, Partition: k.Partition}
}

// Read reads k's state (ReadShareGroupState).
func (ps *sharePersister) Read(k share.Key, leaderEpoch int32, done func(share.Snapshot, error)) {
	sk := stateKey(k)
	var got share.Snapshot
	ps.call(sk, func(c *sharestate.Coordinator, answer func(error)) {
		c.Read(sk, leaderEpoch, func(st sharestate.State, err error) {
			got = snapshotOf(st)
			answer(err)
		})
	}, func() kmsg.Request {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = k.Group
		req.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: k.Topic,
			Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: k.Partition, LeaderEpoch: leaderEpoch}}}}
		return req
	}, func(resp kmsg.Response) error {
		r := resp.(*kmsg.ReadShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return errors.New("ReadShareGroupState answered without its partition")
		}
		p := r.Topics[0].Partitions[0]
		got = share.Snapshot{StateEpoch: p.StateEpoch, StartOffset: p.StartOffset}
		for _, b := range p.StateBatches {
			got.Batches = append(got.Batches, share.Batch{First: b.FirstOffset, Last: b.LastOffset,
				State: share.State(b.DeliveryState), DeliveryCount: b.DeliveryCount})
		}
		return kerr.ErrorForCode(p.ErrorCode)
	}, func(err error) { done(got, err) })
}

// Initialize initializes k's state (InitializeShareGroupState).
func (ps *sharePersister) Initialize(k share.Key, stateEpoch int32, start int64, done func(error)) {
	sk := stateKey(k)
	ps.call(sk, func(c *sharestate.Coordinator, answer func(error)) {
		c.Initialize(sk, stateEpoch, start, answer)
	}, func() kmsg.Request {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = k.Group
		req.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: k.Topic,
			Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: k.Partition, StateEpoch: stateEpoch, StartOffset: start}}}}
		return req
	}, func(resp kmsg.Response) error {
		r := resp.(*kmsg.InitializeShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return errors.New("InitializeShareGroupState answered without its partition")
		}
		return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
	}, done)
}

// Write writes k's state (WriteShareGroupState).
func (ps *sharePersister) Write(k share.Key, leaderEpoch int32, snap share.Snapshot, done func(error)) {
	sk := stateKey(k)
	st := stateOf(snap, leaderEpoch)
	ps.call(sk, func(c *sharestate.Coordinator, answer func(error)) {
		c.Write(sk, st, answer)
	}, func() kmsg.Request {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = k.Group
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = k.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
		for _, b := range st.Batches {
			p.StateBatches = append(p.StateBatches, kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
				FirstOffset: b.First, LastOffset: b.Last, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
		}
		req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: k.Topic,
			Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
		return req
	}, func(resp kmsg.Response) error {
		r := resp.(*kmsg.WriteShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return errors.New("WriteShareGroupState answered without its partition")
		}
		return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
	}, done)
}

// call runs one persister call for key k: local at the coordinator here,
// else the RPC that req makes to the key's coordinator, whose answer
// parse reads. Retriable errors are tried again after shareStateBackoff
// until shareStateDeadline; done gets the outcome, fences wrapping
// share.ErrFenced.
func (ps *sharePersister) call(k sharestate.Key, local func(*sharestate.Coordinator, func(error)),
	req func() kmsg.Request, parse func(kmsg.Response) error, done func(error)) {
	c := &stateCall{ps: ps, key: k.String(), local: local, req: req, parse: parse, done: done,
		deadline: ps.timer.Now() + shareStateDeadline}
	c.task.Init(c)
	c.Run()
}

// stateCall is one persister call, tried until it is answered or its
// deadline passes; a timer task between tries.
type stateCall struct {
	task     timer.Task
	ps       *sharePersister
	key      string
	local    func(*sharestate.Coordinator, func(error))
	req      func() kmsg.Request
	parse    func(kmsg.Response) error
	done     func(error)
	deadline time.Duration // on the timer's clock
}

// Run tries the call once.
func (c *stateCall) Run() {
	ps, s := c.ps, c.ps.s
	ps.mu.Lock()
	delete(ps.waiting, c)
	ps.mu.Unlock()
	kerrErr := s.shareStateTopic.KeyError(c.key)
	switch {
	case kerrErr == nil:
		c.local(s.shareStates, c.answer)
		return
	case kerrErr != kerr.NotCoordinator:
		c.answer(kerrErr)
		return
	}
	leader, ok := s.shareStateLeader(c.key)
	if !ok || leader == s.member.Self() {
		c.answer(kerr.CoordinatorNotAvailable)
		return
	}
	s.member.Go(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.TransactionMarkerTimeout)
		defer cancel()
		resp, err := s.member.RequestOn(ctx, cluster.Markers, leader, c.req()) // a connection no replication waits behind
		if err != nil {
			c.answer(fmt.Errorf("%w: a share-state request to broker %d: %v", kerr.CoordinatorNotAvailable, leader, err))
			return
		}
		c.answer(c.parse(resp))
	})
}

// answer ends the call with err, or tries it again later when err says
// the coordinator is not to be found now.
func (c *stateCall) answer(err error) {
	var ke *kerr.Error
	errors.As(err, &ke)
	switch {
	case ke == kerr.FencedLeaderEpoch, ke == kerr.FencedStateEpoch:
		c.done(fmt.Errorf("%w: %w", share.ErrFenced, err))
		return
	case ke == kerr.NotCoordinator, ke == kerr.CoordinatorLoadInProgress, ke == kerr.CoordinatorNotAvailable,
		ke == kerr.RequestTimedOut:
		if c.ps.timer.Now() < c.deadline && c.retry() {
			return
		}
	}
	c.done(err)
}

// retry schedules the call's next try, and reports whether it did (not
// once the timer is closed).
func (c *stateCall) retry() bool {
	ps := c.ps
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.waiting == nil {
		ps.waiting = make(map[*stateCall]struct{})
	}
	if ps.timer.Schedule(&c.task, shareStateBackoff) != nil {
		return false
	}
	ps.waiting[c] = struct{}{}
	return true
}

// shareStateLeader returns the leader of key's partition of
// __share_group_state, and whether it has one.
func (s *Server) shareStateLeader(key string) (int32, bool) {
	t, err := s.image().Topic(coordinator.ShareGroupTopic)
	if err != nil || len(t.Partitions) == 0 {
		return 0, false
	}
	p := t.Partitions[coordinator.PartitionFor(key, len(t.Partitions))]
	return p.Leader, !p.Offline()
}

// snapshotOf is st as package share keeps it.
func snapshotOf(st sharestate.State) share.Snapshot {
	out := share.Snapshot{StateEpoch: st.StateEpoch, StartOffset: st.StartOffset}
	for _, b := range st.Batches {
		out.Batches = append(out.Batches, share.Batch{First: b.First, Last: b.Last, State: share.State(b.DeliveryState),
			DeliveryCount: b.DeliveryCount})
	}
	return out
}

// stateOf is snap, written by the leader at leaderEpoch, as the
// coordinator keeps it.
func stateOf(snap share.Snapshot, leaderEpoch int32) sharestate.State {
	out := sharestate.State{StateEpoch: snap.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: snap.StartOffset}
	for _, b := range snap.Batches {
		out.Batches = append(out.Batches, sharestate.Batch{First: b.First, Last: b.Last, DeliveryState: int8(b.State),
			DeliveryCount: b.DeliveryCount})
	}
	return out
}

// persistCode is the code of a share partition whose state could not be
// written, as Kafka's SharePartition maps its persister's errors: a
// coordinator not to be found is COORDINATOR_NOT_AVAILABLE, a newer
// leader NOT_LEADER_OR_FOLLOWER, a newer state epoch FENCED_STATE_EPOCH.
func persistCode(err error) int16 {
	var ke *kerr.Error
	errors.As(err, &ke)
	switch ke {
	case nil:
		if err == nil {
			return 0
		}
		return kerr.UnknownServerError.Code
	case kerr.FencedLeaderEpoch:
		return kerr.NotLeaderForPartition.Code
	case kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable.Code
	}
	return ke.Code
}

// persistAll writes the state of each of sps (nil ones skipped) and calls
// then once every write is durable or failed, with each one's code.
func persistAll(sps []*share.Partition, then func(codes []int16)) {
	codes := make([]int16, len(sps))
	done := countdown(len(sps), func() { then(codes) })
	for i, sp := range sps {
		if sp == nil {
			done()
			continue
		}
		sp.Persist(func(err error) {
			codes[i] = persistCode(err)
			done()
		})
	}
}

// Summary reads k's state epoch and start offset
// (ReadShareGroupStateSummary): start offset -1 when never initialized.
func (ps *sharePersister) Summary(k share.Key, done func(stateEpoch int32, start int64, err error)) {
	sk := stateKey(k)
	var epoch int32
	var start int64 = -1
	ps.call(sk, func(c *sharestate.Coordinator, answer func(error)) {
		st, err := c.Summary(sk)
		epoch, start = st.StateEpoch, st.StartOffset
		answer(err)
	}, func() kmsg.Request {
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.GroupID = k.Group
		req.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: k.Topic,
			Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: k.Partition, LeaderEpoch: -1}}}}
		return req
	}, func(resp kmsg.Response) error {
		r := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return errors.New("ReadShareGroupStateSummary answered without its partition")
		}
		p := r.Topics[0].Partitions[0]
		epoch, start = p.StateEpoch, p.StartOffset
		return kerr.ErrorForCode(p.ErrorCode)
	}, func(err error) { done(epoch, start, err) })
}

// Delete deletes k's state (DeleteShareGroupState).
func (ps *sharePersister) Delete(k share.Key, done func(error)) {
	sk := stateKey(k)
	ps.call(sk, func(c *sharestate.Coordinator, answer func(error)) {
		c.Delete(sk, answer)
	}, func() kmsg.Request {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = k.Group
		req.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: k.Topic,
			Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: k.Partition}}}}
		return req
	}, func(resp kmsg.Response) error {
		r := resp.(*kmsg.DeleteShareGroupStateResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return errors.New("DeleteShareGroupState answered without its partition")
		}
		return kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode)
	}, done)
}

// Reset starts k's state afresh at start, at the next state epoch, so
// that its leader's writes of the old window are fenced (Kafka's
// AlterShareGroupOffsets through InitializeShareGroupState).
func (ps *sharePersister) Reset(k share.Key, start int64, done func(error)) {
	ps.Summary(k, func(epoch int32, old int64, err error) {
		if err != nil {
			done(err)
			return
		}
		next := epoch
		if old >= 0 {
			next++
		}
		ps.Initialize(k, next, start, done)
	})
}

// statePart is one partition of a share-state request (83 to 86): its
// key, where its answer's code and message go, and its call to the share
// coordinator, which calls answered with the coordinator's error.
type statePart struct {
	key  sharestate.Key
	code *int16
	msg  **string
	call func(answered func(error))
}

// askShareStates makes each part's call, where this broker coordinates its
// key (else the part is answered the key's error: NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS), and calls respond once every part is
// answered, from the goroutine of the last.
func (s *Server) askShareStates(parts []statePart, respond func()) {
	done := countdown(len(parts), respond)
	for _, p := range parts {
		if err := s.shareStateTopic.KeyError(p.key.String()); err != nil {
			*p.code = err.Code
			done()
			continue
		}
		p.call(func(err error) {
			*p.code, *p.msg = stateCode(err)
			done()
		})
	}
}

// countdown calls then once done has been called n times, from any
// goroutine.
func countdown(n int, then func()) (done func()) {
	var left atomic.Int32
	left.Store(int32(n) + 1)
	done = func() {
		if left.Add(-1) == 0 {
			then()
		}
	}
	defer done() // n == 0 calls then at once
	return done
}

// stateCode is the code and message of a share coordinator's answer.
func stateCode(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	return errorCode(err), errorMessage(err)
}
