package replica

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
	"github.com/gopurgatory/purgatory/operation"
	"github.com/gopurgatory/purgatory/purgatory"
)

// Replication, as this broker does it (Kafka's, with the leaders the
// metadata log names, apply.go):
//
//   - a produce to a partition's leader is appended to its log (Append);
//     with acks=all it waits in the Produce purgatory under the partition
//     until the high watermark passes it (delayed_produce.go);
//   - each follower fetches from the leader with Fetch requests carrying
//     its replica id (Fetcher). A follower's fetch with nothing new waits
//     in the leader's Fetch purgatory (delayed_fetch.go), and the append
//     completes it: the follower receives the batch within a round trip;
//   - the follower appends the batch, keeping the leader's offsets, and
//     its next fetch, from the offset after it, tells the leader it has
//     the batch (Leaders). When every in-sync replica has it, the high
//     watermark moves, and Wake completes the waiting produce and the
//     consumers' fetches waiting for it;
//   - the leader changes the ISR through the controller (Leaders,
//     AlterPartition): a follower that lags leaves it, one that has caught
//     up joins it, each an AlterPartition checked against the partition
//     epoch; a follower whose broker is fenced leaves it at once, by the
//     controller's own decision.

// TP names a topic-partition: the key fetches and produces wait under.
type TP struct {
	Topic     string
	Partition int32
}

func keyOf(p *storage.Partition) TP { return TP{p.Topic().Name, p.Index()} }

// Config is what a Manager is made of.
type Config struct {
	Member *cluster.Member // this broker in its cluster: the image, the peers
	Store  *storage.Store  // the partitions' logs

	FetchMaxBytes        int32         // fetch.max.bytes: a fetch response's records at most
	LagTimeMax           time.Duration // replica.lag.time.max.ms
	FetchPurgeInterval   int           // fetch.purgatory.purge.interval.requests
	ProducePurgeInterval int           // producer.purgatory.purge.interval.requests
	DeleteRecordsPurge   int           // delete.records.purgatory.purge.interval.requests
	// Fetcher is the followers' fetch settings; Start fills in Self and
	// BrokerEpoch. Its Quota is follower.replication.throttled.rate's.
	Fetcher FetcherConfig
	// LeaderQuota is leader.replication.throttled.rate's (throttle.go);
	// nil throttles nothing.
	LeaderQuota *quota.Replication

	Logger     *zap.Logger
	Registerer prometheus.Registerer // the purgatories' metrics
}

// Manager is the broker's replica manager (Kafka's ReplicaManager): it
// owns the data path between the request handlers and the storage. It
// appends produces and reads fetches on the partitions this broker leads,
// holds what waits for them in its Fetch and Produce purgatories, keeps
// the followers' state and the high watermark (Leaders), runs the
// followers' fetchers (Start), and makes the storage follow the metadata
// log (Apply): a leadership that moves answers what waits on it at once.
type Manager struct {
	cfg     Config // immutable
	member  *cluster.Member
	store   *storage.Store
	log     *zap.Logger
	leaders *Leaders

	fetches  *purgatory.Purgatory[TP] // Kafka's "Fetch" purgatory
	produces *purgatory.Purgatory[TP] // Kafka's "Produce" purgatory
	deletes  *purgatory.Purgatory[TP] // Kafka's "DeleteRecords" purgatory

	alsoWake atomic.Pointer[func(*storage.Partition)] // OnWake's (wake_hook.go)
}

// NewManager returns the replica manager of cfg.Store, with its
// purgatories; Start starts its goroutines, Close answers what waits.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	m := &Manager{cfg: cfg, member: cfg.Member, store: cfg.Store, log: cfg.Logger}
	popts := func(purge int) []purgatory.Option {
		return []purgatory.Option{purgatory.WithLogger(cfg.Logger), purgatory.WithRegisterer(cfg.Registerer),
			purgatory.WithPurgeInterval(purge)}
	}
	var err error
	if m.fetches, err = purgatory.New[TP]("Fetch", popts(cfg.FetchPurgeInterval)...); err != nil {
		return nil, err
	}
	if m.produces, err = purgatory.New[TP]("Produce", popts(cfg.ProducePurgeInterval)...); err != nil {
		_ = m.fetches.Close()
		return nil, err
	}
	if m.deletes, err = purgatory.New[TP]("DeleteRecords", popts(cfg.DeleteRecordsPurge)...); err != nil {
		_ = m.produces.Close()
		_ = m.fetches.Close()
		return nil, err
	}
	m.leaders = NewLeaders(cfg.Member.Self(), leaderEnv{m}, cfg.LagTimeMax, time.Now)
	cfg.Member.OnSessionChange(m.sessionChanged)
	return m, nil
}

// Close closes the purgatories, which answers every waiting request: a
// fetch with what it has, a produce or a DeleteRecords with the error
// Kafka gives a request cut short. The broker closes the metadata log
// first, so that nothing is applied past this point.
func (m *Manager) Close() {
	_ = m.deletes.Close()
	_ = m.produces.Close()
	_ = m.fetches.Close()
}

// Store returns the partitions' logs.
func (m *Manager) Store() *storage.Store { return m.store }

// Fetches returns the Fetch purgatory, for tests and tools that watch
// what waits in it.
func (m *Manager) Fetches() *purgatory.Purgatory[TP] { return m.fetches }

// Produces returns the Produce purgatory, for tests and tools that watch
// what waits in it (acks=all produces, and a coordinator's appends).
func (m *Manager) Produces() *purgatory.Purgatory[TP] { return m.produces }

// Deletes returns the DeleteRecords purgatory, for tests and
// tools that watch what waits in it.
func (m *Manager) Deletes() *purgatory.Purgatory[TP] { return m.deletes }

// Wake checks again the fetches, produces and DeleteRecords waiting on p,
// after anything that can complete them: an append (fetches waiting for
// bytes; produces, when it moved the high watermark), the high watermark
// moving on a follower's fetch or an ISR shrink (produces waiting for
// acks=all, consumers' fetches, which read only below it), a follower's
// log start rising (DeleteRecords waiting for the low watermark), a
// leadership change or the partition deleted (all answered with an error
// now). It is called with no lock held, as CheckAndComplete must be.
func (m *Manager) Wake(p *storage.Partition) {
	key := keyOf(p)
	m.fetches.CheckAndComplete(key)
	m.produces.CheckAndComplete(key)
	m.deletes.CheckAndComplete(key)
	if f := m.alsoWake.Load(); f != nil {
		(*f)(p)
	}
}

// AfterAppend follows an append to p, which this broker leads, that is
// not a client's produce (a coordinator's records; Append does it for
// those): a leader alone in its ISR moves its high watermark now
// (Leaders.AfterAppend). Wake then lets the followers waiting for data
// fetch it.
func (m *Manager) AfterAppend(p *storage.Partition) { m.leaders.AfterAppend(p) }

// WatchHighWatermark submits op, which waits for p's high watermark (a
// coordinator's append waiting for its replication, as an acks=-1
// produce), to the Produce purgatory under p, for at most timeout. An
// error means op was not taken (the broker is closing).
func (m *Manager) WatchHighWatermark(op operation.Operation, timeout time.Duration, p *storage.Partition) error {
	_, err := m.produces.TryCompleteElseWatch(op, timeout, keyOf(p))
	return err
}

// EnoughReplicas reports whether p's ISR holds at least its topic's
// min.insync.replicas, and how many it holds (Leaders.EnoughReplicas).
func (m *Manager) EnoughReplicas(p *storage.Partition) (bool, int) {
	return m.leaders.EnoughReplicas(p)
}

// Responder is a request as the replica manager answers it
// (kafkanet.Request is one): the context of its client's connection,
// which withdraws what waits on its behalf when the client goes, and its
// answer, given once.
type Responder interface {
	Context() context.Context
	Respond(resp kmsg.Response)
	// Room takes up to n bytes of the memory budget for the answer's
	// records, without waiting, and returns what it got;
	// RespondHolding answers with n bytes of records, held until written.
	Room(n int) int
	RespondHolding(resp kmsg.Response, n int)
}

// Info is what a broker holds of one partition: its placement, leader,
// leader epoch and ISR as the metadata log has them here, and its own
// replica's offsets.
type Info struct {
	Leader        int32
	LeaderEpoch   int32
	Replicas, ISR []int32
	LogStart      int64
	HighWatermark int64
	LogEnd        int64
	// LeaderEpochs is its replica's leader-epoch cache: where each
	// leader epoch starts in its log.
	LeaderEpochs []storage.EpochEntry
}

// Info returns what this broker holds of topic's partition, for tests and
// tools that watch replication: a follower's log end, a leader's ISR.
func (m *Manager) Info(topic string, partition int32) (Info, error) {
	p, err := m.store.Partition(topic, partition)
	if err != nil {
		return Info{}, err
	}
	o, err := p.Offsets()
	if err != nil {
		return Info{}, err
	}
	st, _ := m.partitionState(p)
	return Info{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, Replicas: st.Replicas, ISR: st.ISR,
		LogStart: o.LogStart, HighWatermark: o.HighWatermark, LogEnd: o.LogEnd, LeaderEpochs: p.LeaderEpochs()}, nil
}
