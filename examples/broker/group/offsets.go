package group

import (
	"cmp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/operation"
)

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// offset is a committed offset (Kafka's OffsetAndMetadata).
type offset struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	committed   time.Duration // on the coordinator's clock
	expireAt    time.Duration // explicit expiry (OffsetCommit v2-v4 retention); valid with explicit
	explicit    bool
	// seq is its record's place among the group's records in the log:
	// the group's commit that set it (group.commits), or, loaded, its
	// record's position there, plus one. A commit made durable after a
	// later one, or a transaction's that ends after a later commit, does
	// not replace it (Kafka's olderThan, by log position).
	seq uint64
}

// CommitRequest is an OffsetCommit, whatever its version.
type CommitRequest struct {
	Group      string
	MemberID   string // "" with Generation -1: a simple consumer, not a member
	InstanceID string // v7+
	Generation int32
	// Retention is v2-v4's retention time: the offsets expire that long
	// after the commit, whatever the group does. Negative: the broker's
	// offsets.retention.minutes, counted from when the group becomes
	// Empty (KIP-211).
	Retention time.Duration
	Offsets   []CommitOffset
}

// CommitOffset is one partition's offset to commit.
type CommitOffset struct {
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1: none
	Metadata    string
}

// CommitOffsets commits offsets (Kafka's handleCommitOffsets) and calls
// respond once with one error per offset, in order (nil: committed). A
// member's commit counts as a heartbeat. Commits with generation -1 and no
// member id come from simple consumers, which use the group only to store
// offsets: they are taken while the group is Empty, and create it if need
// be.
//
// Without an OffsetStore, respond is called before CommitOffsets returns.
// With one, the offsets are appended under the group's mutex and are
// pending until the store says they are durable (see Pending): respond is
// called then, from the goroutine that ends the wait, and only then do
// the offsets replace those FetchOffsets returns, unless a later commit's
// already did or they were deleted meanwhile (Kafka's pending offset
// commits). respond is called with no lock held.
//
// Errors: COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR (the group is not
// coordinated here), ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS (CompletingRebalance: the
// member knows its generation but not yet its assignment),
// OFFSET_METADATA_TOO_LARGE; the store's error when it refuses the offsets
// or they do not become durable (a *kerr.Error it returns, such as
// COORDINATOR_NOT_AVAILABLE or REQUEST_TIMED_OUT; NOT_COORDINATOR for any
// other): they are then not committed.
// Whether the topic exists is the caller's check (Kafka makes it in
// KafkaApis too).
func (c *Coordinator) CommitOffsets(req CommitRequest, respond func([]*kerr.Error)) {
	errs := make([]*kerr.Error, len(req.Offsets))
	var a after
	g, offs, pending := c.commitLocked(&req, errs, &a)
	if g != nil {
		g.unlock()
	}
	a.run()
	if pending == nil {
		respond(errs)
		return
	}
	pending(func(err error) { respond(c.settleCommit(g, req.Offsets, offs, errs, err)) })
}

// commitLocked validates the commit and appends it; it returns the group,
// locked, unless it answers at once (errs), the offsets it committed
// (nil where refused), and, with a store, their wait.
func (c *Coordinator) commitLocked(req *CommitRequest, errs []*kerr.Error, a *after) (*group, []*offset, Pending) {
	all := func(err *kerr.Error) {
		for i := range errs {
			errs[i] = err
		}
	}
	g, err := c.lockGroup(req.Group, req.Generation < 0, a)
	if g == nil {
		if err == nil {
			// Not a simple consumer's commit: it comes from a
			// generation the coordinator has forgotten.
			err = errGeneration
		}
		all(err)
		return nil, nil, nil
	}
	if err := g.validateCommitLocked(req); err != nil {
		all(err)
		return g, nil, nil
	}
	switch g.st {
	case CompletingRebalance:
		all(errRebalance)
		return g, nil, nil
	case Stable, PreparingRebalance:
		// During PreparingRebalance too: the heartbeat tells the member
		// to rejoin, and its offsets stay its own until then.
		m := g.members[req.MemberID]
		c.scheduleSessionLocked(g, m, m.session, a)
	}
	now := c.clk.Now()
	seq := g.nextSeqLocked()
	offs := make([]*offset, len(req.Offsets)) // nil where refused
	for i, o := range req.Offsets {
		if len(o.Metadata) > c.cfg.maxMetadata {
			errs[i] = kerr.OffsetMetadataTooLarge
			continue
		}
		offs[i] = &offset{offset: o.Offset, leaderEpoch: o.LeaderEpoch, metadata: o.Metadata, committed: now, seq: seq}
		if req.Retention >= 0 {
			offs[i].expireAt, offs[i].explicit = satAdd(now, req.Retention), true
		}
	}
	// The store first: an offset the client is told is committed is
	// stored.
	pending, serr := g.storeCommitLocked(req.Offsets, offs)
	if serr != nil {
		code := commitStoreCode(serr)
		for i := range offs {
			if offs[i] != nil {
				errs[i] = code
			}
		}
		return g, nil, nil
	}
	if pending == nil {
		g.applyCommitLocked(req.Offsets, offs, false, a)
		return g, offs, nil
	}
	for i, o := range req.Offsets {
		if offs[i] != nil {
			g.pendingCommits[TopicPartition{o.Topic, o.Partition}]++
		}
	}
	return g, offs, pending
}

// nextSeqLocked numbers a commit the group appends: its records come
// after those of every commit numbered before, in the log.
//
// REQUIRES: g.mu held.
func (g *group) nextSeqLocked() uint64 {
	g.commits++
	return g.commits
}

// applyCommitLocked makes offs (nil where refused) the group's offsets of
// reqs' partitions, unless a later commit's already are; pending says
// the commit was pending (g.pendingCommits counts it).
//
// REQUIRES: g.mu held.
func (g *group) applyCommitLocked(reqs []CommitOffset, offs []*offset, pending bool, a *after) {
	for i, o := range reqs {
		if offs[i] == nil {
			continue
		}
		tp := TopicPartition{o.Topic, o.Partition}
		if pending {
			cleared := g.clearedAt[tp]
			g.settlePendingLocked(tp)
			if offs[i].seq <= cleared {
				continue // deleted since it was appended
			}
		}
		if cur := g.offsets[tp]; cur != nil && cur.seq > offs[i].seq {
			// A later commit was durable first, or a later
			// transaction's committed.
			continue
		}
		g.offsets[tp] = offs[i]
	}
	if g.st == Empty {
		g.armExpiryLocked(a)
	}
}

// settlePendingLocked notes that a pending commit of tp ended.
//
// REQUIRES: g.mu held.
func (g *group) settlePendingLocked(tp TopicPartition) {
	if g.pendingCommits[tp]--; g.pendingCommits[tp] <= 0 {
		delete(g.pendingCommits, tp)
		delete(g.clearedAt, tp)
	}
}

// deleteOffsetLocked deletes tp's offset, as its tombstone does: the
// commits of it pending now are not applied when they become durable,
// and the transactions' offsets of it pending are dropped (as Kafka's
// removeOffsets, and its replay of a tombstone, drop them).
//
// REQUIRES: g.mu held.
func (g *group) deleteOffsetLocked(tp TopicPartition) {
	delete(g.offsets, tp)
	if g.pendingCommits[tp] > 0 {
		g.clearedAt[tp] = g.commits
	}
	g.dropTxnPartitionLocked(tp)
}

// settleCommit ends a pending commit: durable (err nil), its offsets are
// applied; otherwise each is answered err. It returns the answers.
func (c *Coordinator) settleCommit(g *group, reqs []CommitOffset, offs []*offset, errs []*kerr.Error, err error) []*kerr.Error {
	var a after
	g.mu.Lock()
	if err == nil && g.st != Dead {
		g.applyCommitLocked(reqs, offs, true, &a)
	}
	if err != nil {
		code := commitStoreCode(err)
		for i, o := range reqs {
			if offs[i] == nil {
				continue
			}
			errs[i] = code
			g.settlePendingLocked(TopicPartition{o.Topic, o.Partition})
		}
		c.log.Debug("offset commit not durable", zap.String("group", g.id), zap.Error(err))
	}
	g.unlock()
	a.run()
	return errs
}

// validateCommitLocked is Kafka's validateOffsetCommit.
//
// REQUIRES: g.mu held.
func (g *group) validateCommitLocked(req *CommitRequest) *kerr.Error {
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != "" {
		if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
			return err
		}
		if req.Generation != g.gen {
			return errGeneration
		}
		return nil
	}
	if g.st != Empty {
		// Only members commit to a group that has some.
		return errUnknownMember
	}
	return nil
}

// PartitionOffset is a committed offset as OffsetFetch returns it.
type PartitionOffset struct {
	Topic       string
	Partition   int32
	Offset      int64 // -1: none committed
	LeaderEpoch int32 // -1: none
	Metadata    string
	// Err is UNSTABLE_OFFSET_COMMIT, with Offset -1, when stable offsets
	// were required and a commit of the partition is pending.
	Err *kerr.Error
}

// FetchOffsets returns the offsets committed for partitions, in order; -1
// for those without one, or all of them when the group does not exist
// (Kafka answers blindly, whatever the group's state, since simple
// consumers store offsets in groups they do not join). A transaction's
// offsets are not among them until its commit marker (CompleteTxn). With
// requireStable (OffsetFetch v7+, KIP-447), a partition with a commit
// pending, a transaction's or one waiting to be durable, is answered
// UNSTABLE_OFFSET_COMMIT (Kafka's hasPendingOffsetCommitsForTopicPartition),
// which the client retries: a consumer that takes over a partition does
// not start from an offset that an open transaction is about to replace.
// O(partitions × producers with offsets pending in the group).
//
// Errors: COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) FetchOffsets(group string, partitions []TopicPartition, requireStable bool) ([]PartitionOffset, *kerr.Error) {
	out := make([]PartitionOffset, len(partitions))
	for i, tp := range partitions {
		out[i] = PartitionOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1}
	}
	var a after
	g, err := c.lockGroup(group, false, &a)
	if g == nil {
		return out, err
	}
	for i, tp := range partitions {
		out[i] = g.fetchLocked(tp, requireStable)
	}
	g.unlock()
	return out, nil
}

// FetchAllOffsets returns every offset committed in group, by topic and
// partition; with requireStable, those of partitions with a commit
// pending are UNSTABLE_OFFSET_COMMIT, as FetchOffsets answers them.
// Partitions with nothing committed yet are left out, a transaction's
// pending offsets with them, as Kafka lists them.
//
// Errors: COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) FetchAllOffsets(group string, requireStable bool) ([]PartitionOffset, *kerr.Error) {
	var a after
	g, err := c.lockGroup(group, false, &a)
	if g == nil {
		return nil, err
	}
	out := make([]PartitionOffset, 0, len(g.offsets))
	for tp := range g.offsets {
		out = append(out, g.fetchLocked(tp, requireStable))
	}
	g.unlock()
	slices.SortFunc(out, func(x, y PartitionOffset) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out, nil
}

// fetchLocked returns the group's offset of tp as OffsetFetch answers it.
//
// REQUIRES: g.mu held.
func (g *group) fetchLocked(tp TopicPartition, requireStable bool) PartitionOffset {
	po := PartitionOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, LeaderEpoch: -1}
	switch o := g.offsets[tp]; {
	case requireStable && (g.pendingCommits[tp] > 0 || g.hasTxnLocked(tp)):
		po.Err = kerr.UnstableOffsetCommit
	case o != nil:
		po.Offset, po.LeaderEpoch, po.Metadata = o.offset, o.leaderEpoch, o.metadata
	}
	return po
}

// DeleteOffsets deletes committed offsets (Kafka's handleDeleteOffsets,
// KIP-496) and returns the group's error, or one per partition, in order.
// An Empty group's offsets all go; a consumer group with members keeps
// those of the topics it subscribes to (see WithSubscriptions); any other
// group with members keeps them all. A partition's offsets pending in
// open transactions go with its committed one (Kafka 4's deleteOffsets
// writes the tombstone for either).
//
// Errors: COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP,
// NOT_COORDINATOR when the OffsetStore refuses the deletion (nothing is
// deleted); per partition GROUP_SUBSCRIBED_TO_TOPIC.
func (c *Coordinator) DeleteOffsets(group string, partitions []TopicPartition) (*kerr.Error, []*kerr.Error) {
	var a after
	g, err := c.lockGroup(group, false, &a)
	if g == nil {
		if err == nil {
			err = kerr.GroupIDNotFound
		}
		return err, nil
	}
	defer a.run()
	defer g.unlock()
	errs := make([]*kerr.Error, len(partitions))
	if g.st != Empty {
		if g.ptype != "consumer" {
			return kerr.NonEmptyGroup, nil
		}
		subscribed, known := g.subscribedTopicsLocked()
		for i, tp := range partitions {
			if _, ok := subscribed[tp.Topic]; ok || !known {
				errs[i] = kerr.GroupSubscribedToTopic
			}
		}
	}
	var gone []TopicPartition
	for i, tp := range partitions {
		if errs[i] == nil && (g.offsets[tp] != nil || g.hasTxnLocked(tp)) {
			gone = append(gone, tp)
		}
	}
	if err := g.storeDeleteLocked(gone); err != nil {
		return errStore, nil
	}
	for _, tp := range gone {
		g.deleteOffsetLocked(tp)
	}
	if len(gone) > 0 && g.st == Empty {
		g.armExpiryLocked(&a)
	}
	return nil, errs
}

// subscribedTopicsLocked returns the topics a consumer group's members
// subscribe to, read from their metadata for the group's protocol; known is
// false when they cannot be read, and every topic then counts as
// subscribed, as in Kafka.
//
// REQUIRES: g.mu held.
func (g *group) subscribedTopicsLocked() (topics map[string]struct{}, known bool) {
	decode := g.c.cfg.subscriptions
	if decode == nil || g.proto == "" {
		return nil, false
	}
	topics = make(map[string]struct{})
	for _, m := range g.members {
		ts, err := decode(m.metadata(g.proto))
		if err != nil {
			return nil, false
		}
		for _, t := range ts {
			topics[t] = struct{}{}
		}
	}
	return topics, true
}

// expiresLocked returns when o expires, and false if it never does: at its
// explicit expiry if it has one; otherwise offsets.retention.minutes after
// the group became Empty, or, for a group that never had members, after the
// commit (KIP-211).
//
// REQUIRES: g.mu held, g Empty.
func (g *group) expiresLocked(o *offset) (time.Duration, bool) {
	switch {
	case o.explicit:
		return o.expireAt, true
	case g.c.cfg.retention == forever:
		return 0, false
	case g.ptype != "":
		return satAdd(g.at, g.c.cfg.retention), true
	}
	return satAdd(o.committed, g.c.cfg.retention), true
}

// armExpiryLocked makes sure the Empty group's offset expiration is due
// when its earliest offset expires, or, with no offsets, when the group
// has been Empty for the empty-group retention. The offset of a partition
// with a transaction's offset pending does not expire until the
// transaction ends, nor is a group deleted while one is (Kafka's
// cleanupExpiredOffsets): CompleteTxn arms it again. It does nothing if
// that is already so: a commit to an Empty group rarely moves the
// earliest expiry. O(offsets × producers with offsets pending).
//
// REQUIRES: g.mu held.
func (g *group) armExpiryLocked(a *after) {
	if g.st != Empty {
		return
	}
	if g.heldLocked() {
		g.disarmExpiryLocked(a) // until Release
		return
	}
	at, ok := satAdd(g.at, g.c.cfg.emptyGrace), len(g.txns) == 0
	if len(g.offsets) > 0 {
		at, ok = maxDuration, false
		for tp, o := range g.offsets {
			if t, can := g.expiresLocked(o); can && t < at && !g.hasTxnLocked(tp) {
				at, ok = t, true
			}
		}
	}
	if g.expiry != nil && ok && g.expiryAt == at {
		return
	}
	g.disarmExpiryLocked(a)
	if !ok {
		return
	}
	e := &offsetExpiry{g: g}
	e.ShareLock(&g.mu)
	g.expiry, g.expiryAt = e, at
	submit(a, g.c.expiry, e, max(at-g.c.clk.Now(), 0), g.id)
}

// disarmExpiryLocked cancels the group's offset expiration: it left Empty,
// or is armed anew.
//
// REQUIRES: g.mu held.
func (g *group) disarmExpiryLocked(a *after) {
	if g.expiry == nil {
		return
	}
	g.expiry = nil
	a.do(func() { g.c.expiry.CheckAndComplete(g.id) })
}

// offsetExpiry is an Empty group's offset expiration, in the
// OffsetExpiration purgatory under the group's id: due when the group's
// earliest offset expires, it removes those that have, and deletes the
// group once none is left (Kafka's cleanupGroupMetadata, per group instead
// of a periodic sweep). Its lock is the group's mutex.
type offsetExpiry struct {
	operation.State
	g *group // immutable
}

// TryComplete reports whether it was disarmed. REQUIRES: e.g.mu held.
func (e *offsetExpiry) TryComplete() bool { return e.g.expiry != e }

// OnComplete does nothing: the work is OnExpiration's.
func (e *offsetExpiry) OnComplete() {}

// OnExpiration expires the group's offsets and deletes it if none is left.
func (e *offsetExpiry) OnExpiration() {
	g, c := e.g, e.g.c
	var a after
	g.mu.Lock()
	if g.expiry == e && g.st == Empty && !c.closed.Load() && g.heldLocked() {
		g.expiry = nil // held since it was armed: Release arms it again
	}
	if g.expiry == e && g.st == Empty && !c.closed.Load() {
		g.expiry = nil
		now := c.clk.Now()
		var expired []TopicPartition
		for tp, o := range g.offsets {
			if at, ok := g.expiresLocked(o); ok && at <= now && !g.hasTxnLocked(tp) {
				expired = append(expired, tp)
			}
		}
		// A store that refuses is logged, and the offsets expire here
		// anyway: they expire again after a restart.
		if len(expired) == len(g.offsets) && len(g.txns) == 0 {
			_ = g.storeGoneLocked()
			c.log.Info("deleting empty group without offsets", zap.String("group", g.id), zap.Int("expired", len(expired)))
			c.killLocked(g, &a)
			if c.cfg.onExpired != nil {
				a.do(func() { c.cfg.onExpired(g.id) })
			}
		} else {
			sortPartitions(expired)
			_ = g.storeDeleteLocked(expired)
			for _, tp := range expired {
				g.deleteOffsetLocked(tp)
			}
			c.log.Debug("expired offsets", zap.String("group", g.id), zap.Int("expired", len(expired)), zap.Int("left", len(g.offsets)))
			g.armExpiryLocked(&a)
		}
	}
	g.unlock()
	a.run()
}

// satAdd returns t + d, saturating instead of overflowing.
func satAdd(t, d time.Duration) time.Duration {
	if d > 0 && t > maxDuration-d {
		return maxDuration
	}
	return t + d
}
