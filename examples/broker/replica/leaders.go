package replica

import (
	"slices"
	"sync"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// Leaders is what a leader knows of its partitions' followers
// (Kafka's Partition and its Replica states): each follower's log end
// offset, as its fetches report it, and when it was last caught up. The
// ISR itself is the metadata log's (LeaderEnv.State): the leader only asks the
// controller to change it (AlterPartition, with the partition epoch it
// saw), shrinking it when a follower has not caught up for
// replica.lag.time.max.ms and growing it when one has everything below the
// high watermark, one change in flight per partition.
//
// The high watermark is the smallest log end offset among the ISR, the
// leader's own included, counting a follower whose addition is in flight
// (Kafka's "maximal ISR"): once the controller commits it, it must already
// hold everything below the high watermark, or a leader elected from it
// could miss an acknowledged record. When the high watermark moves, the
// produces waiting for acks=all and the fetches waiting for committed data
// are checked (the caller wakes them: see server.Server.wake).
//
// A partition's state is made the first time it is needed at a leader
// epoch (a produce to it, a follower's fetch, a record applied) with every
// follower caught up now, as Kafka starts a new leader's followers; a new
// leader epoch starts it afresh.
//
// Lock order: Leaders.mu, then a Followers' mu, then the
// storage Partition's lock (taken inside its methods). No purgatory is
// called with any of them held.
type Leaders struct {
	self   int32         // this broker's id; immutable
	env    LeaderEnv     // immutable
	lagMax time.Duration // replica.lag.time.max.ms; immutable
	now    func() time.Time

	mu     sync.Mutex // guards the following
	byPart map[*storage.Partition]*Followers
}

// LeaderEnv is what Leaders needs of the broker: the metadata image, and
// a way to ask the controller for an ISR change.
type LeaderEnv interface {
	// State returns p's state in the image as this broker may act on it
	// (a broker not yet registered leads nothing); ok is false for a
	// partition the image lacks.
	State(p *storage.Partition) (st metadata.Partition, ok bool)
	// Fenced reports whether broker is fenced in the image.
	Fenced(broker int32) bool
	// AskISR sends the controller an ISR change for f's partition, asked
	// against st, in the background, and calls f.Done when answered; it
	// reports whether it sent it. It must not call f.Done itself: it is
	// called with f's lock held.
	AskISR(f *Followers, st metadata.Partition, isr []int32) bool
}

// Followers is the replica state of one partition this broker leads, at
// one leader epoch: its followers' fetch states and the ISR change in
// flight.
type Followers struct {
	p     *storage.Partition
	epoch int32 // the leader epoch it was made at; immutable

	mu        sync.Mutex // guards the following
	followers map[int32]*followerState
	// pending is the ISR asked of the controller, nil when no change is
	// in flight; pendingAt the partition epoch it was asked against.
	pending   []int32
	pendingAt int32
}

// followerState is Kafka's per-replica fetch state at the leader.
type followerState struct {
	logEnd        int64     // the fetch offset of its last fetch: what it has
	logStart      int64     // the log start its last fetch carried; -1 before one at this epoch
	lastCaughtUp  time.Time // when it last had everything the leader had
	lastFetchEnd  int64     // the leader's log end at its last fetch
	lastFetchTime time.Time
}

// NewLeaders returns the replica state of the partitions broker self
// leads: empty, each partition's made when first needed. lagMax is
// replica.lag.time.max.ms, now the clock.
func NewLeaders(self int32, env LeaderEnv, lagMax time.Duration, now func() time.Time) *Leaders {
	return &Leaders{self: self, env: env, lagMax: lagMax, now: now,
		byPart: make(map[*storage.Partition]*Followers)}
}

// of returns p's replica state and its state in the image if this broker
// leads p with followers, or nil: a partition of one replica, or one this
// broker does not lead.
func (l *Leaders) of(p *storage.Partition) (*Followers, metadata.Partition) {
	st, ok := l.env.State(p)
	if !ok || st.Leader != l.self || len(st.Replicas) <= 1 {
		return nil, st
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if pr := l.byPart[p]; pr != nil && pr.epoch == st.LeaderEpoch {
		if len(pr.followers) < len(st.Replicas)-1 {
			pr.addFollowers(st, l.self, l.now())
		}
		return pr, st
	}
	pr := &Followers{p: p, epoch: st.LeaderEpoch, followers: make(map[int32]*followerState)}
	now := l.now()
	for _, id := range st.Replicas {
		if id != l.self {
			pr.followers[id] = &followerState{logStart: -1, lastCaughtUp: now, lastFetchTime: now}
		}
	}
	l.byPart[p] = pr
	return pr, st
}

// addFollowers adds the replicas of st that pr lacks: a reassignment
// added them at the same leader epoch (replicas removed move it, and pr
// is then made afresh). They start out of the ISR, having fetched
// nothing.
//
// REQUIRES: l.mu held (Leaders.mu before a Followers' mu).
func (pr *Followers) addFollowers(st metadata.Partition, self int32, now time.Time) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, id := range st.Replicas {
		if _, ok := pr.followers[id]; !ok && id != self {
			pr.followers[id] = &followerState{logStart: -1, lastCaughtUp: now, lastFetchTime: now}
		}
	}
}

// EnoughReplicas reports whether p's ISR is large enough for acks=all, and
// its size: at least its topic's min.insync.replicas, which is the
// broker's unless the topic was created with its own.
func (l *Leaders) EnoughReplicas(p *storage.Partition) (bool, int) {
	st, _ := l.env.State(p)
	n := len(st.ISR)
	return int32(n) >= p.Topic().Config().MinISR(), n
}

// FollowerFetched records that replica fetched p from offset (Kafka's
// updateFollowerFetchState): its log end is offset, it is caught up if
// offset reaches the leader's log end now, or the leader's log end at its
// previous fetch (then it was caught up as of that fetch). A follower out
// of the ISR is proposed for it once it has everything below the high
// watermark. It reports whether the high watermark moved. A replica not
// among p's followers is ignored, and so is an offset past the leader's
// log end: the follower holds offsets the leader does not (a leader
// restarted without them), its fetch fails with OFFSET_OUT_OF_RANGE, and
// it truncates before it counts, as in Kafka, where a failed fetch
// updates no fetch state.
func (l *Leaders) FollowerFetched(p *storage.Partition, replica int32, offset int64) (moved bool) {
	return l.followerFetched(p, replica, offset, 0, false)
}

// followerFetched is FollowerFetched, and with withLogStart also
// FollowerLogStart, in one lookup of p and one hold of its lock: a
// follower's fetch, on the leader's fetch path, records both. It reports
// whether the high watermark moved or the log start rose.
func (l *Leaders) followerFetched(p *storage.Partition, replica int32, offset, logStart int64, withLogStart bool) (moved bool) {
	pr, st := l.of(p)
	if pr == nil {
		return false
	}
	o, err := p.Offsets()
	now := l.now()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	f := pr.followers[replica]
	if f == nil {
		return false
	}
	if withLogStart && logStart != f.logStart {
		moved = logStart > f.logStart
		f.logStart = logStart
	}
	if err != nil || offset > o.LogEnd {
		return moved
	}
	f.logEnd = offset
	switch {
	case offset >= o.LogEnd:
		f.lastCaughtUp = now
	case offset >= f.lastFetchEnd && f.lastFetchTime.After(f.lastCaughtUp):
		f.lastCaughtUp = f.lastFetchTime
	}
	f.lastFetchEnd, f.lastFetchTime = o.LogEnd, now
	pr.settleLocked(st)
	if !st.InISR(replica) && pr.pending == nil && offset >= o.HighWatermark && !l.env.Fenced(replica) {
		pr.askLocked(l.env, st, append(slices.Clone(st.ISR), replica))
	}
	return pr.advanceLocked(st) || moved
}

// FollowerLogStart records the log start that replica's fetch of p
// carried (the LogStartOffset Kafka's updateFollowerFetchState takes),
// for p's low watermark. It reports whether it rose, so that the caller
// checks the DeleteRecords waiting on p. A replica not among p's
// followers is ignored. O(1).
func (l *Leaders) FollowerLogStart(p *storage.Partition, replica int32, logStart int64) (raised bool) {
	pr, _ := l.of(p)
	if pr == nil {
		return false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	f := pr.followers[replica]
	if f == nil || logStart == f.logStart {
		return false
	}
	raised = logStart > f.logStart
	f.logStart = logStart
	return raised
}

// LowWatermark returns p's low watermark, which this broker leads (Kafka's
// lowWatermarkIfLeader): the smallest log start among its replicas on
// brokers alive (not fenced), the leader's own included, as their last
// fetches carried them; a follower that has not fetched at this leader
// epoch holds it at -1, as in Kafka. A DeleteRecords is answered once it
// reaches the offset asked. Without followers it is the log start. It
// fails with the partition's error (deleted). O(replicas).
func (l *Leaders) LowWatermark(p *storage.Partition) (int64, error) {
	o, err := p.Offsets()
	if err != nil {
		return -1, err
	}
	pr, _ := l.of(p)
	if pr == nil {
		return o.LogStart, nil
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	low := o.LogStart
	for id, f := range pr.followers {
		if !l.env.Fenced(id) {
			low = min(low, f.logStart)
		}
	}
	return low, nil
}

// AfterAppend moves p's high watermark after the leader appended to it, or
// after its ISR changed in the image. The caller wakes what waits on p.
func (l *Leaders) AfterAppend(p *storage.Partition) {
	pr, st := l.of(p)
	if pr == nil {
		return // a partition of one replica: Append moves its high watermark
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.settleLocked(st)
	pr.advanceLocked(st)
}

// Shrink asks the controller to drop from each partition's ISR the
// followers not caught up for replica.lag.time.max.ms (Kafka's
// maybeShrinkIsr), and forgets partitions deleted or no longer led here.
// The ISR changes when the controller's record is applied.
func (l *Leaders) Shrink() {
	now := l.now()
	l.mu.Lock()
	all := make([]*Followers, 0, len(l.byPart))
	for p, pr := range l.byPart {
		if st, ok := l.env.State(p); p.Deleted() || !ok || st.Leader != l.self || st.LeaderEpoch != pr.epoch {
			delete(l.byPart, p)
			continue
		}
		all = append(all, pr)
	}
	l.mu.Unlock()
	for _, pr := range all {
		st, ok := l.env.State(pr.p)
		if !ok {
			continue
		}
		pr.mu.Lock()
		pr.settleLocked(st)
		isr := slices.DeleteFunc(slices.Clone(st.ISR), func(id int32) bool {
			f := pr.followers[id]
			return f != nil && now.Sub(f.lastCaughtUp) > l.lagMax
		})
		if pr.pending == nil && len(isr) < len(st.ISR) {
			pr.askLocked(l.env, st, isr)
		}
		pr.mu.Unlock()
	}
}

// settleLocked forgets a change in flight once the image's partition
// epoch moved past the one it was asked against: the controller decided
// it, one way or another.
//
// REQUIRES: pr.mu held.
func (pr *Followers) settleLocked(st metadata.Partition) {
	if pr.pending != nil && st.PartitionEpoch != pr.pendingAt {
		pr.pending = nil
	}
}

// askLocked sends the controller an ISR change, in the background.
//
// REQUIRES: pr.mu held.
func (pr *Followers) askLocked(env LeaderEnv, st metadata.Partition, isr []int32) {
	pr.pending, pr.pendingAt = isr, st.PartitionEpoch
	if !env.AskISR(pr, st, isr) {
		pr.pending = nil
	}
}

// Partition returns the partition whose followers f holds.
func (pr *Followers) Partition() *storage.Partition { return pr.p }

// Done ends the change in flight asked against partition epoch at, if it
// is still the one: the controller refused it (or could not be reached),
// and the next check may ask again. A change committed ends when the
// image moves past at (settleLocked), never earlier: the ISR it commits
// may hold a follower that must keep counting for the high watermark
// until this leader's image says so.
func (pr *Followers) Done(at int32) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.pending != nil && pr.pendingAt == at {
		pr.pending = nil
	}
}

// advanceLocked moves the high watermark to the smallest log end among the
// ISR and a follower whose addition is in flight (the leader's is its
// log's).
//
// REQUIRES: pr.mu held.
func (pr *Followers) advanceLocked(st metadata.Partition) bool {
	o, err := pr.p.Offsets()
	if err != nil {
		return false
	}
	hw := o.LogEnd
	for _, id := range st.ISR {
		if f := pr.followers[id]; f != nil {
			hw = min(hw, f.logEnd)
		}
	}
	for _, id := range pr.pending {
		if f := pr.followers[id]; f != nil && !st.InISR(id) {
			hw = min(hw, f.logEnd)
		}
	}
	return pr.p.AdvanceHighWatermark(hw)
}
