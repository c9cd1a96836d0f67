package server

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/consumergroup"
	"github.com/gopurgatory/purgatory/examples/broker/group"
	"github.com/gopurgatory/purgatory/examples/broker/quota"
	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/sharegroup"
	"github.com/gopurgatory/purgatory/examples/broker/storage/logdir"
)

// Config is the broker's configuration. Field names follow Kafka's broker
// configs, and so do the flag and properties-file names (see RegisterFlags).
type Config struct {
	// Listener lists the listeners (Kafka's listeners):
	// NAME://host:port,..., or one bare host:port, a PLAINTEXT listener.
	// Their protocols and what protects them are Security's.
	Listener string
	// Security is the listeners' protocols, TLS and SASL settings
	// (config_security.go).
	Security

	// AdvertisedListener is the address clients are told to connect to
	// (advertised.listeners); empty means the listener's actual address.
	AdvertisedListener string
	// NodeID is this broker's id (node.id).
	NodeID int32
	// MetricsAddr serves /metrics and /debug/pprof; empty disables it.
	MetricsAddr string

	NumPartitions          int32         // num.partitions
	OffsetsTopicPartitions int32         // offsets.topic.num.partitions
	OffsetsTopicRF         int16         // offsets.topic.replication.factor, capped at the cluster's size
	OffsetsCommitTimeout   time.Duration // offsets.commit.timeout.ms: a commit's wait for its replication
	// OffsetsCompactionDeadRecords is how many dead records (offsets
	// overwritten or deleted, groups deleted) an offsets partition holds
	// at least before its leader rewrites the live ones and drops the
	// rest, once they also outnumber the live (package coordinator's
	// compaction).
	OffsetsCompactionDeadRecords int64
	// OffsetsTopicSegmentBytes is the segment size of the offsets topic's
	// partitions in log.dirs (offsets.topic.segment.bytes): the unit its
	// compaction's dropped records leave the disk in.
	OffsetsTopicSegmentBytes int64
	DefaultReplication       int16         // default.replication.factor
	AutoCreateTopics         bool          // auto.create.topics.enable
	SocketRequestMaxBytes    int32         // socket.request.max.bytes
	MaxInFlightPerConn       int           // requests read ahead of their responses, per connection
	LogRetention             time.Duration // log.retention.ms (-1: forever)
	LogRetentionBytes        int64         // log.retention.bytes (-1: unbounded)
	LogRetentionCheck        time.Duration // log.retention.check.interval.ms
	LogCleanerBackoff        time.Duration // log.cleaner.backoff.ms: between the log cleaner's passes (0: none)
	MessageMaxBytes          int32         // message.max.bytes: the largest record batch accepted
	FetchPurgeInterval       int           // fetch.purgatory.purge.interval.requests
	FetchSessionSlots        int           // max.incremental.fetch.session.cache.slots (0: no fetch sessions)
	FetchSessionEviction     time.Duration // min.incremental.fetch.session.eviction.ms
	ProducePurgeInterval     int           // producer.purgatory.purge.interval.requests
	DeleteRecordsPurge       int           // delete.records.purgatory.purge.interval.requests
	GroupInitialRebalance    time.Duration // group.initial.rebalance.delay.ms
	GroupMinSessionTimeout   time.Duration // group.min.session.timeout.ms
	GroupMaxSessionTimeout   time.Duration // group.max.session.timeout.ms
	GroupMaxSize             int           // group.max.size: a classic group's most members
	OffsetsRetention         time.Duration // offsets.retention.minutes
	TransactionalIDExpiry    time.Duration // transactional.id.expiration.ms (idle transactional ids, producer ids' state)
	// The transaction coordinator's (package txn): its state topic,
	// __transaction_state, and the longest transaction a producer may
	// ask for.
	TransactionMaxTimeout      time.Duration // transaction.max.timeout.ms
	TransactionTopicPartitions int32         // transaction.state.log.num.partitions
	TransactionTopicRF         int16         // transaction.state.log.replication.factor, capped at the cluster's size
	TransactionTopicMinISR     int16         // transaction.state.log.min.isr, capped at the replication factor
	// The share coordinator's (package sharestate): its state topic,
	// __share_group_state.
	ShareStateTopicPartitions int32 // share.coordinator.state.topic.num.partitions
	ShareStateTopicRF         int16 // share.coordinator.state.topic.replication.factor, capped at the cluster's size
	ShareStateTopicMinISR     int16 // share.coordinator.state.topic.min.isr, capped at the replication factor
	// TransactionMarkerTimeout bounds a marker write's wait for its
	// replication, and a WriteTxnMarkers request to another broker
	// (Kafka's request.timeout.ms for its marker channel).
	TransactionMarkerTimeout time.Duration
	// TransactionCompletionWait is how long an AddPartitionsToTxn that
	// finds its producer's previous transaction still completing waits
	// for it, in the TxnCompletion purgatory, before it is answered
	// CONCURRENT_TRANSACTIONS, Kafka's answer at once (this broker's
	// own setting; 0 answers at once).
	TransactionCompletionWait time.Duration
	// TransactionVersion is the finalized level of Kafka's
	// transaction.version feature that ApiVersions advertises (2 by
	// default, as a new Kafka 4 cluster finalizes it; Kafka's
	// operators set it with kafka-features): at 2,
	// clients that know KIP-890 part 2 (kgo) leave out
	// AddPartitionsToTxn and AddOffsetsToTxn and bump their epoch at
	// every EndTxn; at 1 they run transaction version 1. Both are served
	// whatever it is, each to the clients that ask for it.
	TransactionVersion    int16
	MaxIdempotentInFlight int           // batches a producer may have in flight per partition (Kafka: 5)
	ConnectionsMaxIdle    time.Duration // connections.max.idle.ms

	// MaxConnections bounds the connections open at once
	// (max.connections): a connection past it is closed as soon as it is
	// accepted, and counted. -1 (the default) derives it from
	// RLIMIT_NOFILE: what the reserve leaves, half of it with log.dirs
	// (see limits.go). Kafka's default is unbounded.
	MaxConnections int
	// MaxConnectionsPerIP bounds the connections from one client address
	// (max.connections.per.ip; Kafka's default, unbounded).
	MaxConnectionsPerIP int
	// MaxBrokerPartitions bounds the partitions this broker holds, all
	// topics together (max.broker.partitions, KIP-578): a topic creation
	// past it is POLICY_VIOLATION. -1 (the default) is 100,000, and with
	// log.dirs no more than RLIMIT_NOFILE leaves the logs (limits.go).
	MaxBrokerPartitions int32
	// QueuedMaxRequestBytes bounds the bytes of requests read and not yet
	// answered, and of fetched records not yet written
	// (queued.max.request.bytes): past it the broker stops reading
	// sockets, and fetches answer with less. -1 is unbounded (Kafka's
	// default); the default here is 512 MiB.
	QueuedMaxRequestBytes int64
	// QueuedMaxRequestBytesPerConnection and QueuedMaxRequestBytesPerIP
	// bound the bytes of the requests being read (begun, not yet whole)
	// on one connection and from one client address
	// (queued.max.request.bytes.per.connection and .per.ip, this broker's
	// own), so that one client sending large requests slowly cannot take
	// queued.max.request.bytes from the others: a request over either is
	// refused (its connection closed), one its address has no room for
	// yet waits before it is read. 0, the default, is a quarter and a
	// half of queued.max.request.bytes; -1 is unbounded. Clients behind
	// one address (a NAT) share its bound.
	QueuedMaxRequestBytesPerConnection int64
	QueuedMaxRequestBytesPerIP         int64
	// SocketReadTimeout closes a connection whose request has not
	// arrived whole this long after its first byte, however steadily it
	// comes (socket.read.timeout.ms, this broker's own: Kafka has none,
	// and a slow sender holds its memory); the time the broker waits for
	// memory does not count.
	SocketReadTimeout time.Duration
	// FetchMaxBytes caps a fetch response's records, whatever max_bytes
	// the request asks for (fetch.max.bytes, Kafka's 55 MiB); beyond it a
	// response holds only the one batch Kafka returns whatever its size.
	FetchMaxBytes int32

	// LogDirs is the directory the broker keeps its data in (Kafka's
	// log.dirs, one directory here): partitions in segment files, the
	// topics, the group offsets, the cluster id. Empty keeps everything
	// in memory, gone when the broker stops. See package logdir for what
	// survives a crash.
	LogDirs                  string
	LogSegmentBytes          int64         // log.segment.bytes
	LogRoll                  time.Duration // log.roll.ms (-1: never by time)
	LogIndexIntervalBytes    int64         // log.index.interval.bytes
	LogFlushIntervalMessages int64         // log.flush.interval.messages
	LogFlushInterval         time.Duration // log.flush.interval.ms (-1: never)
	LogFlushOffsetCheckpoint time.Duration // log.flush.offset.checkpoint.interval.ms: recovery points written

	// Cluster lists every broker of the cluster as
	// id@host:port,id@host:port,... (see package cluster); empty runs one
	// broker alone. This broker is the entry with NodeID.
	Cluster string
	// ControllerQuorumVoters gives the metadata quorum's Raft addresses
	// (controller.quorum.voters, id@host:port,...): every broker of
	// Cluster, and only they. Empty derives each from its Kafka listener,
	// port + 1000.
	ControllerQuorumVoters string
	// BrokerHeartbeatInterval is how often a broker of a cluster
	// heartbeats the active controller (broker.heartbeat.interval.ms).
	BrokerHeartbeatInterval time.Duration
	// BrokerSessionTimeout is how long the active controller waits for a
	// broker's heartbeat before it fences it and moves its leaderships
	// (broker.session.timeout.ms).
	BrokerSessionTimeout time.Duration
	// ControlledShutdown has Close ask the active controller to move this
	// broker's leaderships away before it stops
	// (controlled.shutdown.enable).
	ControlledShutdown bool
	// ControllerElectionTimeout is how long a voter of the metadata quorum
	// hears nothing from its leader before it stands for election
	// (controller.quorum.election.timeout.ms; Raft's heartbeat and
	// election timeouts).
	ControllerElectionTimeout time.Duration
	MinInsyncReplicas         int32 // min.insync.replicas
	// UncleanLeaderElection is unclean.leader.election.enable, the
	// default of topics that do not set their own: whether a partition
	// whose ISR has no live replica is led by a live replica outside it,
	// losing the records it lacks, rather than staying offline.
	UncleanLeaderElection bool
	// AutoLeaderRebalance, LeaderImbalanceCheck and LeaderImbalancePct
	// are auto.leader.rebalance.enable,
	// leader.imbalance.check.interval.seconds and
	// leader.imbalance.per.broker.percentage: the active controller gives
	// brokers back the leadership of the partitions they are the
	// preferred (first) replica of, once in sync.
	AutoLeaderRebalance  bool
	LeaderImbalanceCheck time.Duration
	LeaderImbalancePct   int
	ReplicaLagTimeMax    time.Duration // replica.lag.time.max.ms
	ReplicaFetchWaitMax  time.Duration // replica.fetch.wait.max.ms
	ReplicaFetchMinBytes int32         // replica.fetch.min.bytes
	ReplicaFetchMaxBytes int32         // replica.fetch.max.bytes
	ReplicaFetchBackoff  time.Duration // replica.fetch.backoff.ms

	// KIP-848 consumer groups' (package consumergroup): the session
	// timeout and heartbeat interval the broker sets for every member,
	// and the assignors members may ask for, the first the default.
	GroupConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms
	GroupConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	GroupConsumerAssignors         []string      // group.consumer.assignors
	GroupConsumerMaxSize           int           // group.consumer.max.size: a consumer group's most members, classic ones included
	// GroupConsumerMigrationPolicy is group.consumer.migration.policy:
	// whether a classic group with members becomes a consumer group when
	// a consumer-protocol member joins it (bidirectional, upgrade), or
	// refuses it (downgrade, disabled); and whether a consumer group whose
	// last consumer-protocol member left goes back to a classic group of
	// its classic members (bidirectional, downgrade) (group_types.go).
	GroupConsumerMigrationPolicy string

	// Share groups' (KIP-932; packages sharegroup and share): the
	// session timeout and heartbeat interval of their members, the
	// acquisition lock's duration, each the default of its group config
	// (share.session.timeout.ms, share.heartbeat.interval.ms,
	// share.record.lock.duration.ms: share_configs.go) and the bounds a
	// group's own value must keep; the deliveries after which a released
	// record is archived, and the records a share partition holds in
	// flight before it acquires nothing new.
	GroupShareSessionTimeout          time.Duration // group.share.session.timeout.ms
	GroupShareMinSessionTimeout       time.Duration // group.share.min.session.timeout.ms
	GroupShareMaxSessionTimeout       time.Duration // group.share.max.session.timeout.ms
	GroupShareHeartbeatInterval       time.Duration // group.share.heartbeat.interval.ms
	GroupShareMinHeartbeatInterval    time.Duration // group.share.min.heartbeat.interval.ms
	GroupShareMaxHeartbeatInterval    time.Duration // group.share.max.heartbeat.interval.ms
	GroupShareRecordLockDuration      time.Duration // group.share.record.lock.duration.ms
	GroupShareMinRecordLockDuration   time.Duration // group.share.min.record.lock.duration.ms
	GroupShareMaxRecordLockDuration   time.Duration // group.share.max.record.lock.duration.ms
	GroupShareDeliveryCountLimit      int16         // group.share.delivery.count.limit
	GroupSharePartitionMaxRecordLocks int           // group.share.partition.max.record.locks
	GroupShareMaxSize                 int           // group.share.max.size: a share group's most members

	// QuotaWindowNum and QuotaWindowSize are Kafka's quota.window.num
	// and quota.window.size.seconds: a client's token bucket holds their
	// product's worth of its quota (package quota), and a client IP's
	// connection creation rate is measured over them, as Kafka's Rate
	// measures it (connection_quota.go).
	QuotaWindowNum  int
	QuotaWindowSize time.Duration
}

// Default returns Kafka's defaults, with the listener on loopback.
func Default() Config {
	return Config{
		Listener:               "127.0.0.1:9092",
		Security:               defaultSecurity(),
		NodeID:                 1,
		NumPartitions:          1,
		OffsetsTopicPartitions: 50,
		OffsetsTopicRF:         3,
		OffsetsCommitTimeout:   5 * time.Second,

		OffsetsCompactionDeadRecords: 10_000,
		OffsetsTopicSegmentBytes:     100 << 20,
		DefaultReplication:           1,
		AutoCreateTopics:             true,
		SocketRequestMaxBytes:        100 << 20,
		MaxInFlightPerConn:           100,
		LogRetention:                 168 * time.Hour,
		LogRetentionBytes:            -1,
		LogRetentionCheck:            5 * time.Minute,
		LogCleanerBackoff:            15 * time.Second,
		MessageMaxBytes:              1048588,
		FetchPurgeInterval:           1000,
		FetchSessionSlots:            1000,
		FetchSessionEviction:         2 * time.Minute,
		ProducePurgeInterval:         1000,
		DeleteRecordsPurge:           1,
		AutoLeaderRebalance:          true,
		LeaderImbalanceCheck:         300 * time.Second,
		LeaderImbalancePct:           10,
		GroupInitialRebalance:        3 * time.Second,
		GroupMinSessionTimeout:       6 * time.Second,
		GroupMaxSessionTimeout:       30 * time.Minute,
		GroupMaxSize:                 group.DefaultMaxSize,
		OffsetsRetention:             7 * 24 * time.Hour,
		TransactionalIDExpiry:        7 * 24 * time.Hour,
		TransactionMaxTimeout:        15 * time.Minute,
		TransactionTopicPartitions:   50,
		TransactionTopicRF:           3,
		TransactionTopicMinISR:       2,
		ShareStateTopicPartitions:    50,
		ShareStateTopicRF:            3,
		ShareStateTopicMinISR:        2,
		TransactionMarkerTimeout:     30 * time.Second,
		TransactionCompletionWait:    time.Second,
		TransactionVersion:           2,
		MaxIdempotentInFlight:        5,
		ConnectionsMaxIdle:           10 * time.Minute,
		MaxConnections:               -1,
		MaxConnectionsPerIP:          math.MaxInt32,
		MaxBrokerPartitions:          -1,
		QueuedMaxRequestBytes:        512 << 20,
		SocketReadTimeout:            30 * time.Second,
		FetchMaxBytes:                55 << 20,

		LogSegmentBytes:          logdir.DefaultSegmentBytes,
		LogRoll:                  logdir.DefaultRollAfter,
		LogIndexIntervalBytes:    logdir.DefaultIndexIntervalBytes,
		LogFlushIntervalMessages: math.MaxInt64,
		LogFlushInterval:         -1,
		LogFlushOffsetCheckpoint: logdir.DefaultCheckpointInterval,

		MinInsyncReplicas:    1,
		ReplicaLagTimeMax:    30 * time.Second,
		ReplicaFetchWaitMax:  500 * time.Millisecond,
		ReplicaFetchMinBytes: 1,
		ReplicaFetchMaxBytes: 1 << 20,
		ReplicaFetchBackoff:  time.Second,

		QuotaWindowNum:  quota.DefaultSamples,
		QuotaWindowSize: quota.DefaultWindow,

		GroupConsumerSessionTimeout:    consumergroup.DefaultSessionTimeout,
		GroupConsumerHeartbeatInterval: consumergroup.DefaultHeartbeatInterval,
		GroupConsumerAssignors:         slices.Clone(consumergroup.DefaultAssignors),
		GroupConsumerMigrationPolicy:   "bidirectional",
		GroupConsumerMaxSize:           consumergroup.DefaultMaxSize,

		GroupShareSessionTimeout:          sharegroup.DefaultSessionTimeout,
		GroupShareMinSessionTimeout:       45 * time.Second,
		GroupShareMaxSessionTimeout:       60 * time.Second,
		GroupShareHeartbeatInterval:       sharegroup.DefaultHeartbeatInterval,
		GroupShareMinHeartbeatInterval:    5 * time.Second,
		GroupShareMaxHeartbeatInterval:    15 * time.Second,
		GroupShareRecordLockDuration:      30 * time.Second,
		GroupShareMinRecordLockDuration:   15 * time.Second,
		GroupShareMaxRecordLockDuration:   60 * time.Second,
		GroupShareDeliveryCountLimit:      share.DefaultDeliveryLimit,
		GroupSharePartitionMaxRecordLocks: share.DefaultMaxLocks,
		GroupShareMaxSize:                 sharegroup.DefaultMaxSize,

		BrokerHeartbeatInterval:   2 * time.Second,
		BrokerSessionTimeout:      9 * time.Second,
		ControllerElectionTimeout: time.Second,
		ControlledShutdown:        true,
	}
}

// validate reports the first setting out of range.
func (c *Config) validate() error {
	if err := c.validateSecurity(); err != nil {
		return err
	}
	if err := c.validateShareGroups(); err != nil { // share_configs.go
		return err
	}
	switch {
	case c.NumPartitions < 1:
		return fmt.Errorf("num.partitions: %d, must be at least 1", c.NumPartitions)
	case c.OffsetsTopicPartitions < 1:
		return fmt.Errorf("offsets.topic.num.partitions: %d, must be at least 1", c.OffsetsTopicPartitions)
	case c.OffsetsTopicRF < 1:
		return fmt.Errorf("offsets.topic.replication.factor: %d, must be at least 1", c.OffsetsTopicRF)
	case c.OffsetsCommitTimeout < time.Millisecond:
		return fmt.Errorf("offsets.commit.timeout.ms: %v, must be at least 1ms", c.OffsetsCommitTimeout)
	case c.TransactionTopicPartitions < 1:
		return fmt.Errorf("transaction.state.log.num.partitions: %d, must be at least 1", c.TransactionTopicPartitions)
	case c.TransactionTopicRF < 1 || c.TransactionTopicMinISR < 1:
		return errors.New("transaction.state.log.replication.factor and transaction.state.log.min.isr must be at least 1")
	case c.ShareStateTopicPartitions < 1 || c.ShareStateTopicRF < 1 || c.ShareStateTopicMinISR < 1:
		return errors.New("share.coordinator.state.topic.num.partitions, .replication.factor and .min.isr must be at least 1")
	case c.TransactionMaxTimeout < time.Millisecond || c.TransactionMarkerTimeout < time.Millisecond:
		return errors.New("transaction.max.timeout.ms and transaction.marker.timeout.ms must be at least 1ms")
	case c.TransactionCompletionWait < 0:
		return errors.New("transaction.completion.wait.ms must not be negative")
	case c.TransactionVersion < 1 || c.TransactionVersion > maxTransactionVersion:
		return fmt.Errorf("transaction.version: %d, must be 1 or 2", c.TransactionVersion)
	case c.OffsetsCompactionDeadRecords < 1:
		return fmt.Errorf("offsets.topic.compaction.dead.records: %d, must be at least 1", c.OffsetsCompactionDeadRecords)
	case c.DefaultReplication < 1:
		return fmt.Errorf("default.replication.factor: %d, must be at least 1", c.DefaultReplication)
	case c.SocketRequestMaxBytes < 1024:
		return fmt.Errorf("socket.request.max.bytes: %d, must be at least 1024", c.SocketRequestMaxBytes)
	case c.MaxInFlightPerConn < 1:
		return fmt.Errorf("max in-flight per connection: %d, must be at least 1", c.MaxInFlightPerConn)
	case c.FetchPurgeInterval < 0 || c.ProducePurgeInterval < 0 || c.DeleteRecordsPurge < 0:
		return errors.New("purgatory purge intervals must not be negative")
	case c.FetchSessionSlots < 0 || c.FetchSessionEviction < 0:
		return errors.New("max.incremental.fetch.session.cache.slots and min.incremental.fetch.session.eviction.ms must not be negative")
	case c.AutoLeaderRebalance && (c.LeaderImbalanceCheck <= 0 || c.LeaderImbalancePct < 0 || c.LeaderImbalancePct > 100):
		return errors.New("leader.imbalance.check.interval.seconds must be positive, and leader.imbalance.per.broker.percentage from 0 to 100")
	case c.GroupMinSessionTimeout > c.GroupMaxSessionTimeout:
		return errors.New("group.min.session.timeout.ms exceeds group.max.session.timeout.ms")
	case c.GroupMaxSize < 1 || c.GroupConsumerMaxSize < 1:
		return fmt.Errorf("group.max.size (%d) and group.consumer.max.size (%d) must be at least 1", c.GroupMaxSize, c.GroupConsumerMaxSize)
	case c.GroupConsumerHeartbeatInterval <= 0 || c.GroupConsumerHeartbeatInterval >= c.GroupConsumerSessionTimeout:
		return errors.New("group.consumer.heartbeat.interval.ms must be positive and below group.consumer.session.timeout.ms")
	case !knownAssignors(c.GroupConsumerAssignors):
		return fmt.Errorf("group.consumer.assignors: %v, must name one or more of uniform and range", c.GroupConsumerAssignors)
	case !slices.Contains([]string{"bidirectional", "upgrade", "downgrade", "disabled"}, c.GroupConsumerMigrationPolicy):
		return fmt.Errorf("group.consumer.migration.policy: %q, must be bidirectional, upgrade, downgrade or disabled", c.GroupConsumerMigrationPolicy)
	case c.MaxConnections < -1 || c.MaxConnectionsPerIP < 0 || c.MaxBrokerPartitions < -1:
		return errors.New("max.connections and max.broker.partitions must be -1 (derived) or at least 0, max.connections.per.ip at least 0")
	case c.QueuedMaxRequestBytes == 0 || c.QueuedMaxRequestBytes < -1:
		return fmt.Errorf("queued.max.request.bytes: %d, must be positive or -1 (unbounded)", c.QueuedMaxRequestBytes)
	case !validShare(c.QueuedMaxRequestBytesPerConnection) || !validShare(c.QueuedMaxRequestBytesPerIP):
		return fmt.Errorf("queued.max.request.bytes.per.connection and .per.ip: %d and %d, must be 0 (derived), -1 (unbounded) or at least 1024",
			c.QueuedMaxRequestBytesPerConnection, c.QueuedMaxRequestBytesPerIP)
	case c.SocketReadTimeout <= 0:
		return errors.New("socket.read.timeout.ms must be positive")
	case c.FetchMaxBytes < 1024:
		return fmt.Errorf("fetch.max.bytes: %d, must be at least 1024", c.FetchMaxBytes)
	case c.MaxIdempotentInFlight < 1:
		return errors.New("max idempotent in-flight batches must be at least 1")
	case strings.Contains(c.LogDirs, ","):
		return fmt.Errorf("log.dirs: %q: this broker keeps one directory", c.LogDirs)
	case c.MinInsyncReplicas < 1:
		return fmt.Errorf("min.insync.replicas: %d, must be at least 1", c.MinInsyncReplicas)
	case c.ReplicaLagTimeMax <= 0 || c.ReplicaFetchWaitMax < 0 || c.ReplicaFetchBackoff < 0:
		return errors.New("replica.lag.time.max.ms must be positive, replica.fetch.wait.max.ms and replica.fetch.backoff.ms not negative")
	case c.BrokerHeartbeatInterval <= 0 || c.BrokerSessionTimeout <= c.BrokerHeartbeatInterval:
		return errors.New("broker.heartbeat.interval.ms must be positive, and broker.session.timeout.ms above it")
	case c.ControllerElectionTimeout < 10*time.Millisecond:
		return errors.New("controller.quorum.election.timeout.ms must be at least 10")
	case c.ReplicaFetchMinBytes < 1 || c.ReplicaFetchMaxBytes < 1:
		return errors.New("replica.fetch.min.bytes and replica.fetch.max.bytes must be at least 1")
	case c.QuotaWindowNum < 1 || c.QuotaWindowSize < time.Second:
		return fmt.Errorf("quota.window.num %d and quota.window.size.seconds %v: must be at least 1", c.QuotaWindowNum, c.QuotaWindowSize)
	}
	if c.Cluster != "" {
		if _, err := cluster.Parse(c.Cluster, c.ControllerQuorumVoters, c.NodeID); err != nil {
			return err
		}
	}
	return nil
}

// validShare reports whether n is a queued.max.request.bytes.per.* value:
// 0 (derived), -1 (unbounded), or at least 1024 bytes.
func validShare(n int64) bool { return n == 0 || n == -1 || n >= 1024 }

// setting is one named config: how to set it from text, and how to show it.
type setting struct {
	name, usage string
	set         func(string) error
	get         func() string
}

func stringSetting(name, usage string, p *string) setting {
	return setting{name, usage, func(s string) error { *p = s; return nil }, func() string { return *p }}
}

func intSetting[T int | int16 | int32 | int64](name, usage string, p *T) setting {
	return setting{name, usage,
		func(s string) error {
			v, err := strconv.ParseInt(s, 10, 64)
			if err == nil && int64(T(v)) != v {
				err = fmt.Errorf("%d is out of range", v)
			}
			*p = T(v)
			return err
		},
		func() string { return strconv.FormatInt(int64(*p), 10) }}
}

// stringListSetting reads a comma-separated list.
func stringListSetting(name, usage string, p *[]string) setting {
	return setting{name, usage,
		func(s string) error {
			*p = strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
			return nil
		},
		func() string { return strings.Join(*p, ",") }}
}

func boolSetting(name, usage string, p *bool) setting {
	return setting{name, usage,
		func(s string) error {
			v, err := strconv.ParseBool(s)
			*p = v
			return err
		},
		func() string { return strconv.FormatBool(*p) }}
}

// durationSetting reads a count of unit, as Kafka's *.ms and *.minutes
// configs are; a negative count means forever.
func durationSetting(name, usage string, p *time.Duration, unit time.Duration) setting {
	return setting{name, usage,
		func(s string) error {
			v, err := strconv.ParseInt(s, 10, 64)
			*p = time.Duration(v) * unit
			if v < 0 {
				*p = -1
			}
			return err
		},
		func() string {
			if *p < 0 {
				return "-1"
			}
			return strconv.FormatInt(int64(*p/unit), 10)
		}}
}

// settings lists every config by its Kafka name.
func (c *Config) settings() []setting {
	ms, min := time.Millisecond, time.Minute
	return append([]setting{
		stringSetting("listeners", "listeners, NAME://host:port,... or one host:port (PLAINTEXT)", &c.Listener),
		stringSetting("advertised.listeners", "addresses clients are told to use, NAME://host:port,... or one host:port for the first listener (default: the listeners' own)", &c.AdvertisedListener),
		intSetting("node.id", "this broker's id", &c.NodeID),
		stringSetting("metrics.listener", "host:port serving /metrics and /debug/pprof (empty: off)", &c.MetricsAddr),
		intSetting("num.partitions", "partitions of an auto-created topic", &c.NumPartitions),
		intSetting("offsets.topic.num.partitions", "partitions of the offsets topic, __consumer_offsets", &c.OffsetsTopicPartitions),
		intSetting("offsets.topic.replication.factor", "replication factor of the offsets topic, capped at the cluster's size", &c.OffsetsTopicRF),
		durationSetting("offsets.commit.timeout.ms", "how long an offset commit waits for its record to be replicated", &c.OffsetsCommitTimeout, ms),
		intSetting("offsets.topic.segment.bytes", "segment file size of the offsets topic's partitions in log.dirs", &c.OffsetsTopicSegmentBytes),
		intSetting("offsets.topic.compaction.dead.records", "dead records an offsets partition holds, once they outnumber the live, before its leader rewrites the live ones and drops the rest", &c.OffsetsCompactionDeadRecords),
		intSetting("default.replication.factor", "replication factor of an auto-created topic", &c.DefaultReplication),
		boolSetting("auto.create.topics.enable", "create topics on first metadata or produce request", &c.AutoCreateTopics),
		intSetting("socket.request.max.bytes", "largest request accepted; a larger one closes the connection", &c.SocketRequestMaxBytes),
		intSetting("queued.max.requests.per.connection", "requests read ahead of their responses on one connection", &c.MaxInFlightPerConn),
		durationSetting("log.retention.ms", "how long records are kept (-1: forever)", &c.LogRetention, ms),
		intSetting("log.retention.bytes", "bytes kept per partition (-1: unbounded)", &c.LogRetentionBytes),
		durationSetting("log.retention.check.interval.ms", "how often retention is applied to every partition", &c.LogRetentionCheck, ms),
		durationSetting("log.cleaner.backoff.ms", "how often the log cleaner looks for compacted partitions to clean (0: never)", &c.LogCleanerBackoff, ms),
		intSetting("message.max.bytes", "largest record batch accepted, in bytes", &c.MessageMaxBytes),
		intSetting("max.incremental.fetch.session.cache.slots", "fetch sessions (KIP-227) the broker keeps (0: none, every fetch is full)", &c.FetchSessionSlots),
		durationSetting("min.incremental.fetch.session.eviction.ms", "how long a fetch session is unused before a new one may take its slot", &c.FetchSessionEviction, ms),
		intSetting("fetch.purgatory.purge.interval.requests", "completed fetches listed before a purge (0: none, each leaves its lists as it completes)", &c.FetchPurgeInterval),
		intSetting("producer.purgatory.purge.interval.requests", "completed produces listed before a purge (0: none, each leaves its lists as it completes)", &c.ProducePurgeInterval),
		intSetting("delete.records.purgatory.purge.interval.requests", "completed delete-records listed before a purge", &c.DeleteRecordsPurge),
		durationSetting("group.initial.rebalance.delay.ms", "wait for more members before an empty group's first rebalance", &c.GroupInitialRebalance, ms),
		durationSetting("group.min.session.timeout.ms", "smallest session timeout a member may ask for", &c.GroupMinSessionTimeout, ms),
		durationSetting("group.max.session.timeout.ms", "largest session timeout a member may ask for", &c.GroupMaxSessionTimeout, ms),
		intSetting("group.max.size", "most members of a classic group: a JoinGroup past it is GROUP_MAX_SIZE_REACHED", &c.GroupMaxSize),
		intSetting("group.consumer.max.size", "most members of a KIP-848 consumer group, classic ones included; a larger classic group is not upgraded", &c.GroupConsumerMaxSize),
		durationSetting("group.consumer.session.timeout.ms", "session timeout of a KIP-848 consumer group's members", &c.GroupConsumerSessionTimeout, ms),
		durationSetting("group.consumer.heartbeat.interval.ms", "heartbeat interval a KIP-848 consumer group's members are told to keep", &c.GroupConsumerHeartbeatInterval, ms),
		stringSetting("group.consumer.migration.policy", "whether a classic group with members becomes a KIP-848 consumer group when a consumer-protocol member joins it: bidirectional or upgrade; downgrade or disabled refuse it", &c.GroupConsumerMigrationPolicy),
		durationSetting("group.share.session.timeout.ms", "session timeout of a share group's members, unless the group sets share.session.timeout.ms", &c.GroupShareSessionTimeout, ms),
		durationSetting("group.share.min.session.timeout.ms", "smallest share.session.timeout.ms a share group may set", &c.GroupShareMinSessionTimeout, ms),
		durationSetting("group.share.max.session.timeout.ms", "largest share.session.timeout.ms a share group may set", &c.GroupShareMaxSessionTimeout, ms),
		durationSetting("group.share.heartbeat.interval.ms", "heartbeat interval a share group's members are told to keep, unless the group sets share.heartbeat.interval.ms", &c.GroupShareHeartbeatInterval, ms),
		durationSetting("group.share.min.heartbeat.interval.ms", "smallest share.heartbeat.interval.ms a share group may set", &c.GroupShareMinHeartbeatInterval, ms),
		durationSetting("group.share.max.heartbeat.interval.ms", "largest share.heartbeat.interval.ms a share group may set", &c.GroupShareMaxHeartbeatInterval, ms),
		durationSetting("group.share.record.lock.duration.ms", "how long a share group's member holds the records it acquired, unless the group sets share.record.lock.duration.ms", &c.GroupShareRecordLockDuration, ms),
		durationSetting("group.share.min.record.lock.duration.ms", "smallest share.record.lock.duration.ms a share group may set", &c.GroupShareMinRecordLockDuration, ms),
		durationSetting("group.share.max.record.lock.duration.ms", "largest share.record.lock.duration.ms a share group may set", &c.GroupShareMaxRecordLockDuration, ms),
		intSetting("group.share.delivery.count.limit", "deliveries of a share group's record after which, released again, it is archived", &c.GroupShareDeliveryCountLimit),
		intSetting("group.share.max.size", "most members of a share group (1 to 1000)", &c.GroupShareMaxSize),
		intSetting("group.share.partition.max.record.locks", "records a share group's partition holds in flight before it acquires nothing new", &c.GroupSharePartitionMaxRecordLocks),
		stringListSetting("group.consumer.assignors", "assignors a KIP-848 consumer group's members may ask for (uniform, range), the first for those that name none", &c.GroupConsumerAssignors),
		durationSetting("offsets.retention.minutes", "how long an empty group's committed offsets are kept", &c.OffsetsRetention, min),
		durationSetting("transactional.id.expiration.ms", "how long an idle transactional id, and an idle producer id's state, is kept", &c.TransactionalIDExpiry, ms),
		durationSetting("transaction.max.timeout.ms", "the longest transaction.timeout.ms a producer may ask for", &c.TransactionMaxTimeout, ms),
		intSetting("transaction.state.log.num.partitions", "partitions of the transaction state topic, __transaction_state", &c.TransactionTopicPartitions),
		intSetting("transaction.state.log.replication.factor", "replication factor of the transaction state topic, capped at the cluster's size", &c.TransactionTopicRF),
		intSetting("transaction.state.log.min.isr", "min.insync.replicas of the transaction state topic, capped at its replication factor", &c.TransactionTopicMinISR),
		intSetting("share.coordinator.state.topic.num.partitions", "partitions of the share coordinator's state topic, __share_group_state", &c.ShareStateTopicPartitions),
		intSetting("share.coordinator.state.topic.replication.factor", "replication factor of the share state topic, capped at the cluster's size", &c.ShareStateTopicRF),
		intSetting("share.coordinator.state.topic.min.isr", "min.insync.replicas of the share state topic, capped at its replication factor", &c.ShareStateTopicMinISR),
		durationSetting("transaction.completion.wait.ms", "how long an AddPartitionsToTxn waits for its producer's previous transaction to complete before it is answered CONCURRENT_TRANSACTIONS (0: at once, as Kafka)", &c.TransactionCompletionWait, ms),
		intSetting("transaction.version", "the transaction.version feature level advertised: 2 lets clients use KIP-890 part 2 (no AddPartitionsToTxn, an epoch bump at every EndTxn), 1 keeps them on version 1", &c.TransactionVersion),
		durationSetting("transaction.marker.timeout.ms", "how long a transaction marker's write, or a WriteTxnMarkers request to another broker, may take before it is retried", &c.TransactionMarkerTimeout, ms),
		intSetting("max.idempotent.in.flight", "batches a producer may have in flight per partition (Kafka: 5)", &c.MaxIdempotentInFlight),
		durationSetting("connections.max.idle.ms", "close connections idle this long", &c.ConnectionsMaxIdle, ms),
		intSetting("max.connections", "connections open at once; more are closed when accepted (-1: derived from RLIMIT_NOFILE)", &c.MaxConnections),
		intSetting("max.connections.per.ip", "connections open at once from one client address", &c.MaxConnectionsPerIP),
		intSetting("max.broker.partitions", "partitions of all topics this broker holds (-1: 100000, and what RLIMIT_NOFILE allows with log.dirs)", &c.MaxBrokerPartitions),
		intSetting("queued.max.request.bytes", "bytes of requests and fetched records held; past it sockets are not read (-1: unbounded)", &c.QueuedMaxRequestBytes),
		intSetting("queued.max.request.bytes.per.connection", "bytes of a request being read on one connection; a larger one closes it (0: a quarter of queued.max.request.bytes, -1: unbounded)", &c.QueuedMaxRequestBytesPerConnection),
		intSetting("queued.max.request.bytes.per.ip", "bytes of the requests being read from one client address; past it they wait, a larger one is refused (0: half of queued.max.request.bytes, -1: unbounded)", &c.QueuedMaxRequestBytesPerIP),
		durationSetting("socket.read.timeout.ms", "close a connection whose request has not arrived whole this long after its first byte", &c.SocketReadTimeout, ms),
		intSetting("fetch.max.bytes", "largest fetch response's records, whatever the request asks", &c.FetchMaxBytes),
		stringSetting("log.dirs", "directory for segment files, topics and group offsets, recovered on restart (empty: in memory)", &c.LogDirs),
		intSetting("log.segment.bytes", "size at which a partition's segment file is rolled", &c.LogSegmentBytes),
		durationSetting("log.roll.ms", "age at which a partition's segment file is rolled (-1: never by age)", &c.LogRoll, ms),
		intSetting("log.index.interval.bytes", "bytes of batches between two offset index entries", &c.LogIndexIntervalBytes),
		intSetting("log.flush.interval.messages", "fsync after this many records (1: every produce, surviving a power loss)", &c.LogFlushIntervalMessages),
		durationSetting("log.flush.interval.ms", "fsync unflushed records this often (-1: never; a kill -9 loses nothing acknowledged either way)", &c.LogFlushInterval, ms),
		durationSetting("log.flush.offset.checkpoint.interval.ms", "how often each partition's recovery point (fsynced up to) is written; recovery cuts a torn tail only past it", &c.LogFlushOffsetCheckpoint, ms),
		stringSetting("cluster", "every broker of the cluster, id@host:port,... (empty: this broker alone)", &c.Cluster),
		stringSetting("controller.quorum.voters", "the metadata quorum's Raft addresses, id@host:port,..., every broker of --cluster (empty: each broker's port + 1000)", &c.ControllerQuorumVoters),
		durationSetting("broker.heartbeat.interval.ms", "how often a broker heartbeats the active controller", &c.BrokerHeartbeatInterval, ms),
		boolSetting("controlled.shutdown.enable", "on shutdown, have the controller move this broker's leaderships first", &c.ControlledShutdown),
		durationSetting("controller.quorum.election.timeout.ms", "a quorum voter that hears nothing from its leader this long stands for election", &c.ControllerElectionTimeout, ms),
		durationSetting("broker.session.timeout.ms", "a broker that does not heartbeat for this long is fenced, and its partitions get new leaders", &c.BrokerSessionTimeout, ms),
		intSetting("min.insync.replicas", "in-sync replicas an acks=all produce needs (topics may set their own)", &c.MinInsyncReplicas),
		boolSetting("unclean.leader.election.enable", "let a live replica outside the ISR lead a partition whose ISR has none, losing what it lacks (topics may set their own)", &c.UncleanLeaderElection),
		boolSetting("auto.leader.rebalance.enable", "have the active controller give brokers back the leadership of the partitions they are the preferred replica of", &c.AutoLeaderRebalance),
		durationSetting("leader.imbalance.check.interval.seconds", "how often the active controller checks the leaders' balance", &c.LeaderImbalanceCheck, time.Second),
		intSetting("leader.imbalance.per.broker.percentage", "share of its preferred partitions a broker may not lead before their leadership is given back to it", &c.LeaderImbalancePct),
		durationSetting("replica.lag.time.max.ms", "a follower not caught up for this long leaves the ISR", &c.ReplicaLagTimeMax, ms),
		durationSetting("replica.fetch.wait.max.ms", "how long a follower's fetch waits at the leader for data", &c.ReplicaFetchWaitMax, ms),
		intSetting("replica.fetch.min.bytes", "bytes a follower's fetch waits for", &c.ReplicaFetchMinBytes),
		intSetting("replica.fetch.max.bytes", "bytes a follower fetches per partition", &c.ReplicaFetchMaxBytes),
		durationSetting("replica.fetch.backoff.ms", "pause after a follower's fetch fails", &c.ReplicaFetchBackoff, ms),
		intSetting("quota.window.num", "windows a client quota's bucket holds, and an IP's connection rate is measured over (Kafka: 11)", &c.QuotaWindowNum),
		durationSetting("quota.window.size.seconds", "time each window of a client quota's bucket spans", &c.QuotaWindowSize, time.Second),
	}, c.securitySettings()...)
}

// RegisterFlags defines one flag per config, named as Kafka names it
// (--num.partitions=3), with c's values as defaults: the usage says the
// default once, unless it is empty (a usage may say what empty means).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	for _, s := range c.settings() {
		usage := s.usage
		if def := s.get(); def != "" {
			usage = fmt.Sprintf("%s (default %s)", usage, def)
		}
		fs.Func(s.name, usage, s.set)
	}
}

// LoadProperties sets configs from a Kafka-style properties file: name=value
// lines, # and ! comments, blank lines ignored. Unknown names are an error,
// so a typo does not go unnoticed.
func (c *Config) LoadProperties(r io.Reader) error {
	byName := make(map[string]setting)
	for _, s := range c.settings() {
		byName[s.name] = s
	}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			name, value, ok = strings.Cut(line, ":")
		}
		if !ok {
			return fmt.Errorf("line %d: want name=value, got %q", n, line)
		}
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		s, known := byName[name]
		if !known {
			return fmt.Errorf("line %d: unknown config %q", n, name)
		}
		if err := s.set(value); err != nil {
			return fmt.Errorf("line %d: %s: %w", n, name, err)
		}
	}
	return sc.Err()
}
