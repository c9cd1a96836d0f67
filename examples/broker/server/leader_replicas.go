package server

import (
	"slices"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// leaderReplicas is what a leader knows of its partitions' followers
// (Kafka's Partition and its Replica states): each follower's log end
// offset, as its fetches report it, when it was last caught up, and the
// in-sync replica set (ISR) that follows from those. The high watermark is
// the smallest log end offset among the ISR, the leader's own included;
// when it moves, the produces waiting for acks=all and the fetches waiting
// for committed data are checked (see Server.wake).
//
// A partition's state is made the first time it is needed (a produce to
// it, a follower's fetch, a Metadata answer) with every replica in sync and
// caught up now, as Kafka starts a new leader's ISR from the controller's.
//
// Lock order: leaderReplicas.mu, then a partitionReplicas' mu, then the
// storage Partition's lock (taken inside its methods). No purgatory is
// called with any of them held.
type leaderReplicas struct {
	cl     *cluster
	lagMax time.Duration // replica.lag.time.max.ms
	now    func() time.Time
	mu     sync.Mutex
	byPart map[*storage.Partition]*partitionReplicas
}

// partitionReplicas is the replica state of one partition this broker
// leads.
type partitionReplicas struct {
	p        *storage.Partition
	replicas []int32 // immutable; replicas[0] is this broker

	mu        sync.Mutex // guards the following
	isr       []int32    // in replicas' order
	followers map[int32]*followerState
}

// followerState is Kafka's per-replica fetch state at the leader.
type followerState struct {
	logEnd        int64     // the fetch offset of its last fetch: what it has
	lastCaughtUp  time.Time // when it last had everything the leader had
	lastFetchEnd  int64     // the leader's log end at its last fetch
	lastFetchTime time.Time
}

func newLeaderReplicas(cl *cluster, cfg Config, now func() time.Time) *leaderReplicas {
	return &leaderReplicas{cl: cl, lagMax: cfg.ReplicaLagTimeMax, now: now,
		byPart: make(map[*storage.Partition]*partitionReplicas)}
}

// of returns p's replica state if this broker leads p with followers, or
// nil: a partition of one replica, or one another broker leads.
func (l *leaderReplicas) of(p *storage.Partition) *partitionReplicas {
	rf := p.Topic().ReplicationFactor
	if rf <= 1 || l.cl.leaderOf(p.Index()) != l.cl.self {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if pr := l.byPart[p]; pr != nil {
		return pr
	}
	pr := &partitionReplicas{p: p, replicas: l.cl.replicasOf(p.Index(), rf), followers: make(map[int32]*followerState)}
	now := l.now()
	pr.isr = slices.Clone(pr.replicas)
	for _, id := range pr.replicas[1:] {
		pr.followers[id] = &followerState{lastCaughtUp: now, lastFetchTime: now}
	}
	l.byPart[p] = pr
	return pr
}

// isr returns the in-sync replicas of p, which this broker leads with
// followers, or nil when it does not.
func (l *leaderReplicas) isr(p *storage.Partition) []int32 {
	pr := l.of(p)
	if pr == nil {
		return nil
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return slices.Clone(pr.isr)
}

// enoughReplicas reports whether p's ISR is large enough for acks=all, and
// its size: at least its topic's min.insync.replicas, which is the
// broker's unless the topic was created with its own.
func (l *leaderReplicas) enoughReplicas(p *storage.Partition) (bool, int) {
	n := 1 // a partition without followers: the leader alone
	if pr := l.of(p); pr != nil {
		pr.mu.Lock()
		n = len(pr.isr)
		pr.mu.Unlock()
	}
	return int32(n) >= p.Topic().Config.MinISR(), n
}

// followerFetched records that replica fetched p from offset (Kafka's
// updateFollowerFetchState): its log end is offset, it is caught up if
// offset reaches the leader's log end now, or the leader's log end at its
// previous fetch (then it was caught up as of that fetch). A follower out
// of the ISR rejoins once it has everything below the high watermark. It
// reports whether the high watermark moved. A replica not among p's
// followers is ignored, and so is an offset past the leader's log end: the
// follower holds offsets the leader does not (a leader restarted without
// them), its fetch fails with OFFSET_OUT_OF_RANGE, and it truncates before
// it counts, as in Kafka, where a failed fetch updates no fetch state.
func (l *leaderReplicas) followerFetched(p *storage.Partition, replica int32, offset int64) (moved bool) {
	pr := l.of(p)
	if pr == nil {
		return false
	}
	o, err := p.Offsets()
	if err != nil {
		return false
	}
	if offset > o.LogEnd {
		return false
	}
	now := l.now()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	f := pr.followers[replica]
	if f == nil {
		return false
	}
	f.logEnd = offset
	switch {
	case offset >= o.LogEnd:
		f.lastCaughtUp = now
	case offset >= f.lastFetchEnd && f.lastFetchTime.After(f.lastCaughtUp):
		f.lastCaughtUp = f.lastFetchTime
	}
	f.lastFetchEnd, f.lastFetchTime = o.LogEnd, now
	if !slices.Contains(pr.isr, replica) && offset >= o.HighWatermark {
		pr.isr = pr.ordered(append(pr.isr, replica))
	}
	return pr.advanceLocked()
}

// afterAppend moves p's high watermark after the leader appended to it,
// which matters when the leader is alone in its ISR. The caller wakes what
// waits on p either way.
func (l *leaderReplicas) afterAppend(p *storage.Partition) {
	pr := l.of(p)
	if pr == nil {
		return
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.advanceLocked()
}

// shrink drops from every partition's ISR the followers not caught up for
// replica.lag.time.max.ms (Kafka's maybeShrinkIsr), and forgets deleted
// partitions. It returns the partitions whose high watermark moved.
func (l *leaderReplicas) shrink() []*storage.Partition {
	now := l.now()
	l.mu.Lock()
	all := make([]*partitionReplicas, 0, len(l.byPart))
	for p, pr := range l.byPart {
		if p.Deleted() {
			delete(l.byPart, p)
			continue
		}
		all = append(all, pr)
	}
	l.mu.Unlock()
	var moved []*storage.Partition
	for _, pr := range all {
		pr.mu.Lock()
		pr.isr = slices.DeleteFunc(pr.isr, func(id int32) bool {
			f := pr.followers[id]
			return f != nil && now.Sub(f.lastCaughtUp) > l.lagMax
		})
		if pr.advanceLocked() {
			moved = append(moved, pr.p)
		}
		pr.mu.Unlock()
	}
	return moved
}

// advanceLocked moves the high watermark to the smallest log end among the
// ISR (the leader's is its log's).
//
// REQUIRES: pr.mu held.
func (pr *partitionReplicas) advanceLocked() bool {
	o, err := pr.p.Offsets()
	if err != nil {
		return false
	}
	hw := o.LogEnd
	for _, id := range pr.isr {
		if f := pr.followers[id]; f != nil {
			hw = min(hw, f.logEnd)
		}
	}
	return pr.p.AdvanceHighWatermark(hw)
}

// ordered returns ids in the order of pr.replicas.
func (pr *partitionReplicas) ordered(ids []int32) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range pr.replicas {
		if slices.Contains(ids, id) {
			out = append(out, id)
		}
	}
	return out
}
