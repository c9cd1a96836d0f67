package group

// Transactional offset commits (KIP-98, KIP-447).
//
// A transactional producer that consumes what it produces (read, process,
// write) commits the consumer's offsets inside its transaction: its
// TxnOffsetCommit appends them to the group's partition of
// __consumer_offsets as a transactional batch of its producer id and
// epoch, and they are pending, invisible to OffsetFetch, until the
// transaction coordinator writes the transaction's marker to that
// partition. A commit marker makes them the group's committed offsets, an
// abort marker drops them, so that the offsets move if and only if the
// transaction's output is committed (exactly-once processing).
//
// Order is the log's: each commit, transactional or not, takes the next
// place among its group's records (offset.seq), and a committed
// transaction's offset replaces the group's only if its record is the
// newer, as Kafka's completePendingTxnOffsetCommit compares record
// offsets. A replay of the partition (package group/records) applies the
// markers alike, and a load brings back what is still pending, with its
// records' positions, so that a marker written after the partition moved
// completes there what it would have completed here.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// TxnCommitRequest is a TxnOffsetCommit, whatever its version.
type TxnCommitRequest struct {
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	// MemberID, InstanceID and Generation (v3+, KIP-447) name the
	// consumer whose offsets they are, so that a zombie's transaction is
	// fenced by the group's generation as its commits would be. Without
	// them (v0-v2: "", "" and -1) the commit is taken whatever the
	// group's members.
	MemberID   string
	InstanceID string
	Generation int32 // -1: not given
	Offsets    []CommitOffset
}

// TxnCommitOffsets commits offsets in the producer's open transaction
// (Kafka's handleTxnCommitOffsets) and calls respond once with one error
// per offset, in order (nil: taken). The offsets are pending until
// CompleteTxn ends the transaction: FetchOffsets does not return them
// (and answers UNSTABLE_OFFSET_COMMIT for their partitions when asked for
// stable offsets). A group that does not exist is created, Empty, as
// Kafka creates it. Unlike a commit, it does not count as a heartbeat and
// is taken whatever the group's state; the member and generation, when
// given, are checked as a commit's (Kafka's validateOffsetCommit).
//
// With an OffsetStore, the offsets are appended (OffsetStore.TxnCommit)
// under the group's mutex and respond is called once they are durable, as
// for CommitOffsets; from the append on, they are pending, so that
// require_stable fetches see them at once. Those the store refuses, or
// that do not become durable, are answered its error and are not pending.
// respond is called with no lock held.
//
// Not checked here: that the producer's transaction is open and has the
// group (AddOffsetsToTxn); Kafka 3.6+ asks the transaction coordinator
// (KIP-890's verification), and the partition fences an old producer
// epoch when the batch is appended (the store's error).
//
// Errors: INVALID_GROUP_ID, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
// UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
// OFFSET_METADATA_TOO_LARGE; the store's error, as for CommitOffsets.
func (c *Coordinator) TxnCommitOffsets(req TxnCommitRequest, respond func([]*kerr.Error)) {
	errs := make([]*kerr.Error, len(req.Offsets))
	var a after
	g, offs, pending := c.txnCommitLocked(&req, errs, &a)
	if g != nil {
		g.unlock()
	}
	a.run()
	if pending == nil {
		respond(errs)
		return
	}
	pending(func(err error) { respond(c.settleTxnCommit(g, &req, offs, errs, err)) })
}

// txnCommitLocked validates the transaction's commit, appends it and
// makes its offsets pending; it returns the group, locked, unless it
// answers at once (errs), the offsets (nil where refused) and, with a
// store, their wait.
func (c *Coordinator) txnCommitLocked(req *TxnCommitRequest, errs []*kerr.Error, a *after) (*group, []*offset, Pending) {
	all := func(err *kerr.Error) {
		for i := range errs {
			errs[i] = err
		}
	}
	if req.Group == "" {
		// Kafka takes commits to the group "", but not in transactions
		// (isValidGroupId).
		all(errInvalidGroup)
		return nil, nil, nil
	}
	g, err := c.lockGroup(req.Group, true, a)
	if g == nil {
		all(err)
		return nil, nil, nil
	}
	if err := g.validateTxnCommitLocked(req); err != nil {
		all(err)
		return g, nil, nil
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
	}
	pending, serr := g.storeTxnCommitLocked(req, offs)
	if serr != nil {
		code := commitStoreCode(serr)
		for i := range offs {
			if offs[i] != nil {
				errs[i] = code
			}
		}
		return g, nil, nil
	}
	for i, o := range req.Offsets {
		if offs[i] != nil {
			g.addTxnLocked(req.ProducerID, TopicPartition{o.Topic, o.Partition}, offs[i])
		}
	}
	// Its partitions' offsets stop expiring, and a group made for it is
	// no longer deleted for want of offsets.
	g.armExpiryLocked(a)
	return g, offs, pending
}

// validateTxnCommitLocked is Kafka's validateOffsetCommit of a
// transactional commit: a producer that names no member (v0-v2) commits
// to any group, one that does is checked as a member's commit is.
//
// REQUIRES: g.mu held.
func (g *group) validateTxnCommitLocked(req *TxnCommitRequest) *kerr.Error {
	if req.Generation < 0 && g.st == Empty {
		return nil
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != "" {
		if err := g.validateMemberLocked(req.MemberID, req.InstanceID); err != nil {
			return err
		}
		if req.Generation != g.gen {
			return errGeneration
		}
	}
	return nil
}

// settleTxnCommit ends the wait of a transaction's commit: durable (err
// nil), nothing changes; otherwise each offset is answered err and is no
// longer pending (Kafka's failPendingTxnOffsetCommit), unless a later
// commit of the producer replaced it. It returns the answers.
func (c *Coordinator) settleTxnCommit(g *group, req *TxnCommitRequest, offs []*offset, errs []*kerr.Error, err error) []*kerr.Error {
	if err == nil {
		return errs
	}
	code := commitStoreCode(err)
	var a after
	g.mu.Lock()
	for i, o := range req.Offsets {
		if offs[i] == nil {
			continue
		}
		errs[i] = code
		tp := TopicPartition{o.Topic, o.Partition}
		if g.txns[req.ProducerID][tp] == offs[i] {
			g.dropTxnOffsetLocked(req.ProducerID, tp)
		}
	}
	g.armExpiryLocked(&a)
	g.unlock()
	a.run()
	c.log.Debug("transactional offset commit not durable", zap.String("group", g.id),
		zap.Int64("producer_id", req.ProducerID), zap.Error(err))
	return errs
}

// CompleteTxn ends producerID's transaction in the groups of the offsets
// partition whose marker was just written (inPartition says which groups
// it holds; it is called with the coordinator's map locked, so it must be
// quick and take no lock): commit makes the transaction's offsets the
// committed ones, each where its record is newer than the committed
// offset's, abort drops them (Kafka's handleTxnCompletion). The Empty
// groups' offset expiry, held back meanwhile, is armed again. A producer
// with nothing pending, or a group unloaded since, is no error: its new
// coordinator replays the marker.
//
// The caller (WriteTxnMarkers) calls it once the marker is appended to a
// partition this coordinator has loaded: a marker appended while the
// partition loads must wait for the load, or the load would bring back
// offsets whose marker was already handled (Kafka 4's runtime answers
// such a marker COORDINATOR_LOAD_IN_PROGRESS, which the transaction
// coordinator retries). O(groups of the producer + their offsets).
func (c *Coordinator) CompleteTxn(inPartition func(group string) bool, producerID int64, commit bool) {
	c.mu.Lock()
	var gs []*group
	for g := range c.producers[producerID] {
		if inPartition(g.id) {
			gs = append(gs, g)
		}
	}
	c.mu.Unlock()
	n := 0
	for _, g := range gs {
		var a after
		g.mu.Lock()
		if g.st != Dead && g.txns[producerID] != nil {
			g.completeTxnLocked(producerID, commit, &a)
			n++
		}
		g.unlock()
		a.run()
	}
	if n > 0 {
		c.log.Debug("transaction ended in groups", zap.Int64("producer_id", producerID), zap.Bool("commit", commit),
			zap.Int("groups", n))
	}
}

// completeTxnLocked ends producerID's transaction in g (Kafka's
// completePendingTxnOffsetCommit).
//
// REQUIRES: g.mu held.
func (g *group) completeTxnLocked(producerID int64, commit bool, a *after) {
	offs := g.txns[producerID]
	g.dropTxnsOfLocked(producerID)
	if commit {
		for tp, o := range offs {
			// Ties do not happen between two records; a loaded group
			// whose store knew no positions has them, and the
			// transaction, which ends last, wins.
			if cur := g.offsets[tp]; cur == nil || cur.seq <= o.seq {
				g.offsets[tp] = o
			}
		}
	}
	g.armExpiryLocked(a)
}

// addTxnLocked makes o producerID's offset of tp pending in g.
//
// REQUIRES: g.mu held; g not Dead.
func (g *group) addTxnLocked(producerID int64, tp TopicPartition, o *offset) {
	offs := g.txns[producerID]
	if offs == nil {
		offs = make(map[TopicPartition]*offset)
		g.txns[producerID] = offs
		c := g.c
		c.mu.Lock()
		gs := c.producers[producerID]
		if gs == nil {
			gs = make(map[*group]struct{})
			c.producers[producerID] = gs
		}
		gs[g] = struct{}{}
		c.mu.Unlock()
	}
	offs[tp] = o
}

// hasTxnLocked reports whether a transaction's offset of tp is pending in
// g. O(producers with offsets pending in g).
//
// REQUIRES: g.mu held.
func (g *group) hasTxnLocked(tp TopicPartition) bool {
	for _, offs := range g.txns {
		if offs[tp] != nil {
			return true
		}
	}
	return false
}

// dropTxnOffsetLocked drops producerID's pending offset of tp.
//
// REQUIRES: g.mu held.
func (g *group) dropTxnOffsetLocked(producerID int64, tp TopicPartition) {
	offs := g.txns[producerID]
	delete(offs, tp)
	if len(offs) == 0 {
		g.dropTxnsOfLocked(producerID)
	}
}

// dropTxnPartitionLocked drops every transaction's pending offset of tp.
//
// REQUIRES: g.mu held.
func (g *group) dropTxnPartitionLocked(tp TopicPartition) {
	for id, offs := range g.txns {
		if offs[tp] != nil {
			g.dropTxnOffsetLocked(id, tp)
		}
	}
}

// dropTxnsOfLocked drops producerID's pending offsets, and g from the
// producer's index.
//
// REQUIRES: g.mu held.
func (g *group) dropTxnsOfLocked(producerID int64) {
	if _, ok := g.txns[producerID]; !ok {
		return
	}
	delete(g.txns, producerID)
	c := g.c
	c.mu.Lock()
	if gs := c.producers[producerID]; gs != nil {
		delete(gs, g)
		if len(gs) == 0 {
			delete(c.producers, producerID)
		}
	}
	c.mu.Unlock()
}

// dropTxnsLocked drops every transaction's pending offsets.
//
// REQUIRES: g.mu held.
func (g *group) dropTxnsLocked() {
	for id := range g.txns {
		g.dropTxnsOfLocked(id)
	}
}

// txnPartitionsLocked returns the partitions with a transaction's offset
// pending and no committed offset.
//
// REQUIRES: g.mu held.
func (g *group) txnPartitionsLocked() []TopicPartition {
	var tps []TopicPartition
	seen := make(map[TopicPartition]bool)
	for _, offs := range g.txns {
		for tp := range offs {
			if g.offsets[tp] == nil && !seen[tp] {
				seen[tp] = true
				tps = append(tps, tp)
			}
		}
	}
	return tps
}
