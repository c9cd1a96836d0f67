package replica

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// FetcherEnv is what a Fetcher needs of the broker: the metadata image it
// follows leaders by, and the requests it sends them.
type FetcherEnv interface {
	// Image returns the cluster's metadata as this broker applied it.
	Image() *metadata.Image
	// Request sends req to broker alone and returns its answer.
	Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
}

// FetcherConfig is a Fetcher's settings, the broker's.
type FetcherConfig struct {
	Self        int32         // this broker's id
	BrokerEpoch int64         // this broker's epoch, sent in its fetches
	WaitMax     time.Duration // replica.fetch.wait.max.ms
	MinBytes    int32         // replica.fetch.min.bytes
	MaxBytes    int32         // replica.fetch.max.bytes, per partition
	Backoff     time.Duration // replica.fetch.backoff.ms
	// Quota is follower.replication.throttled.rate's (throttle.go); nil
	// throttles nothing.
	Quota *quota.Replication
}

// Fetcher is a follower's replica fetcher: Run fetches, from one leader,
// the partitions it leads of which this broker holds a replica. Its
// fields are immutable; a Fetcher serves any number of Runs, one per
// leader.
type Fetcher struct {
	cfg   FetcherConfig
	env   FetcherEnv
	store *storage.Store
	log   *zap.Logger
}

// NewFetcher returns a Fetcher of the partitions in store, with the
// leaders env's image names. A nil log logs nothing.
func NewFetcher(cfg FetcherConfig, env FetcherEnv, store *storage.Store, log *zap.Logger) *Fetcher {
	if log == nil {
		log = zap.NewNop()
	}
	return &Fetcher{cfg: cfg, env: env, store: store, log: log}
}

// Run is the replica fetcher for the partitions broker leader leads
// and this broker follows (Kafka's ReplicaFetcherThread): it fetches them
// from their log ends with this broker's replica id, appends what comes
// back with the leader's offsets, and takes the leader's high watermark.
// Its next fetch tells the leader what it has.
//
// The leader is the one the metadata log names, at a leader epoch: before
// a partition is first fetched at an epoch, and whenever the leader
// answers OFFSET_OUT_OF_RANGE or a batch does not follow on, the follower
// truncates its log by leader epoch to where it agrees with the leader's
// (reconcile, KIP-101 and KIP-279), so that records a former leader wrote
// and its successor never had are cut, whatever the two logs' lengths.
//
// Run returns when ctx is done. The broker runs one for each other broker,
// each on a goroutine of its own.
func (fe *Fetcher) Run(ctx context.Context, leader int32) {
	reconciled := make(map[*storage.Partition]int32) // the leader epoch each was reconciled at
	inSync := make(map[*storage.Partition]bool)      // caught up with the leader's high watermark at its last fetch
	for ctx.Err() == nil {
		var parts []*storage.Partition
		for _, p := range fe.followedFrom(leader) {
			epoch := p.LeaderEpoch()
			if at, ok := reconciled[p]; !ok || at != epoch {
				delete(inSync, p) // a new fetch state, its lag unknown, as Kafka's

				if err := fe.reconcile(ctx, leader, p); err != nil {
					fe.log.Debug("reconcile with leader", zap.Int32("leader", leader), zap.String("topic", p.Topic().Name),
						zap.Int32("partition", p.Index()), zap.Error(err))
					continue
				}
				reconciled[p] = epoch
			}
			parts = append(parts, p)
		}
		for p := range reconciled {
			if p.Deleted() {
				delete(reconciled, p)
				delete(inSync, p)
			}
		}
		// A throttled partition is left out of the fetch (Kafka's
		// buildFetch): none left, the fetcher backs off, as Kafka's
		// does with no fetch to send.
		parts = fe.unthrottled(parts, inSync)
		if len(parts) == 0 {
			if !sleep(ctx, fe.cfg.Backoff) {
				return
			}
			continue
		}
		progressed, err := fe.fetchOnce(ctx, leader, parts, reconciled, inSync)
		if err != nil && ctx.Err() == nil {
			fe.log.Debug("replica fetch", zap.Int32("leader", leader), zap.Error(err))
		}
		if (err != nil || !progressed) && !sleep(ctx, fe.cfg.Backoff) {
			return
		}
	}
}

// followedFrom returns the partitions leader leads of which this broker
// holds a replica.
func (fe *Fetcher) followedFrom(leader int32) []*storage.Partition {
	var out []*storage.Partition
	im := fe.env.Image()
	for _, t := range fe.store.Topics() {
		// The image's replicas, not the topic's replication factor: a
		// reassignment gives a partition of one replica a follower.
		mt, err := im.TopicByID(metadata.TopicID(t.ID))
		if err != nil {
			continue
		}
		for _, p := range t.Partitions {
			if int(p.Index()) >= len(mt.Partitions) {
				continue
			}
			st := mt.Partitions[p.Index()]
			if st.Leader == leader && slices.Contains(st.Replicas, fe.cfg.Self) {
				out = append(out, p)
			}
		}
	}
	return out
}

// fetchOnce sends one replica fetch for parts and applies the answer. It
// reports whether the fetcher may go straight on: some batches came, or no
// partition failed (a fetch that waited and came back empty counts). A
// fetch answered at once with errors and nothing else is not progress, so
// that the fetcher backs off rather than spin on a partition the leader
// refuses.
//
// inSync records, for each partition answered, whether it caught up with
// the leader's high watermark (Kafka's PartitionFetchState.isReplicaInSync,
// which exempts it from the follower's throttle); the bytes of partitions
// this broker's follower throttle lists are recorded in its quota, in sync
// or not, as Kafka's processPartitionData records them.
func (fe *Fetcher) fetchOnce(ctx context.Context, leader int32, parts []*storage.Partition, reconciled map[*storage.Partition]int32,
	inSync map[*storage.Partition]bool) (bool, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = fe.cfg.Self
	req.ReplicaState.ID, req.ReplicaState.Epoch = fe.cfg.Self, fe.cfg.BrokerEpoch
	req.MaxWaitMillis = int32(fe.cfg.WaitMax.Milliseconds())
	req.MinBytes = fe.cfg.MinBytes
	req.MaxBytes = 10 << 20 // Kafka's replica.fetch.response.max.bytes
	req.SessionID, req.SessionEpoch = 0, -1
	byName := make(map[topicPartition]*storage.Partition, len(parts))
	for _, p := range parts {
		o, err := p.Offsets()
		if err != nil {
			continue
		}
		i := slices.IndexFunc(req.Topics, func(t kmsg.FetchRequestTopic) bool { return t.Topic == p.Topic().Name })
		if i < 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = p.Topic().Name, p.Topic().ID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset = p.Index(), o.LogEnd
		rp.CurrentLeaderEpoch = p.LeaderEpoch() // a leader behind this epoch answers UNKNOWN_LEADER_EPOCH
		rp.LogStartOffset = o.LogStart
		rp.PartitionMaxBytes = fe.cfg.MaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		byName[topicPartition{p.Topic().Name, p.Index()}] = p
	}
	resp, err := fe.env.Request(ctx, leader, req)
	if err != nil {
		return false, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return false, kerr.ErrorForCode(fr.ErrorCode)
	}
	appended, failed := false, false
	for _, rt := range fr.Topics {
		name := rt.Topic
		if t, err := fe.store.TopicByID(storage.TopicID(rt.TopicID)); name == "" && err == nil {
			name = t.Name
		}
		for _, rp := range rt.Partitions {
			p := byName[topicPartition{name, rp.Partition}]
			if p == nil {
				continue
			}
			at, ok := reconciled[p]
			if !ok || at != p.LeaderEpoch() {
				// Leadership moved while the fetch was in flight: its
				// batches are of a log this replica no longer follows
				// at that epoch (it may even lead now). It reconciles
				// with the new leader first, as Kafka's fetcher drops a
				// response whose partition state changed meanwhile.
				delete(reconciled, p)
				continue
			}
			switch rp.ErrorCode {
			case 0:
				// The epoch may still move between the check above
				// and the append: AppendReplicaAt checks it again
				// under the lock it appends with, and refuses.
				_, err := p.AppendReplicaAt(at, rp.RecordBatches)
				if errors.Is(err, storage.ErrLeaderEpochMoved) {
					delete(reconciled, p) // dropped, as above
					continue
				}
				appended = appended || len(rp.RecordBatches) > 0
				if err != nil {
					delete(reconciled, p)
					fe.log.Warn("appending a leader's batches", zap.String("topic", name), zap.Int32("partition", rp.Partition), zap.Error(err))
				}
				p.SetHighWatermark(rp.HighWatermark)
				if o, err := p.Offsets(); err == nil {
					inSync[p] = o.LogEnd >= rp.HighWatermark
				}
				if fe.listed(p) {
					fe.cfg.Quota.Record(len(rp.RecordBatches))
				}
				// The leader's log start, exactly (a DeleteRecords may have
				// put it inside a batch), never past this replica's high
				// watermark, as Kafka's follower takes it: what the leader
				// dropped (retention, DeleteRecords, a compacted offsets
				// partition) goes here too, and its next fetch reports it,
				// for the leader's low watermark.
				if _, err := p.AdvanceLogStart(rp.LogStartOffset); err != nil {
					fe.log.Warn("following a leader's log start", zap.String("topic", name), zap.Int32("partition", rp.Partition), zap.Error(err))
				}
			case kerr.OffsetOutOfRange.Code:
				delete(reconciled, p)
				delete(inSync, p)
				failed = true
			default:
				failed = true
			}
		}
	}
	return appended || !failed, nil
}

// topicPartition names a partition in a fetch's answer.
type topicPartition struct {
	topic     string
	partition int32
}

// sleep waits d, or less if ctx is done; it reports whether to go on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
