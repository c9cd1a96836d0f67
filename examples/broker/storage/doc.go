// Package storage keeps the broker's topics, partitions and record batches:
// what a produce appends and a fetch reads.
//
// # Batches
//
// A partition's log holds v2 record batches exactly as clients sent them,
// with two header fields rewritten that the checksum does not cover: the
// base offset, which the log assigns, and the partition leader epoch.
// Before a client's batch is appended it is validated as Kafka's
// LogValidator validates it: the header (ParseBatch: framing, magic,
// CRC-32C, record count), then the records, walked one by one as they are
// decompressed if they are (gzip, snappy, lz4, zstd), keys and values
// skipped, not kept (records.go): lengths, count, offset deltas and the
// max timestamp must agree with the header. A batch that lies is refused
// (ErrCorruptBatch, ErrInvalidRecord, or ErrBatchTooLarge for one that
// inflates past WithInflateLimit, by default 100 MiB); one that does not
// is stored as it came, still compressed, in the very bytes it arrived
// in (Append keeps them, its offsets written in place: no copy), and reads
// return whole batches, as Kafka's zero-copy path does. A record that lies
// whole in the batch, or in a chunk of the inflated stream, is checked in
// place, a slice walk; one across chunks a byte at a time (window.go). At
// most GOMAXPROCS batches are inflated at once. A follower's
// batches, and those a log reads back, were validated when first written:
// their checksum is checked, not their records. Transactional batches are
// accepted from a transactional producer (with a producer id and
// sequences); control batches only from a log or a leader: the
// partition writes its transaction markers itself (AppendMarker, built
// with kmsg), and reads a control batch's type from its record
// (ControlType).
//
// # Offsets
//
//	log start        last stable      high watermark        log end
//	    |  batches ...    |    ...           |      ...           |
//
// The log start is the first offset served (retention moves it, and
// DeleteRecords and AdvanceLogStart, up to the high watermark). It is
// logical, as Kafka's is: DeleteRecords may put it inside a batch, which
// the log keeps, whole, until retention takes its segment (logstart.go).
// The log end
// is the offset the next batch gets. The high watermark is the smallest log
// end among the in-sync replicas; with one replica, the log end, moved on
// each append. Consumers read below it. The last stable offset bounds
// read_committed reads: the high watermark, or the first offset of the
// earliest transaction still open, or complete but whose marker the high
// watermark has not passed, if that is smaller (never below the log
// start). It moves with the high watermark, with markers, and with
// truncations, in O(1) amortised: the transactions are kept in offset
// order (txns.go), never found by a scan of the producers. A
// read_committed read also returns the aborted transactions it overlaps,
// from the partition's aborted index (Kafka's TransactionIndex), for the
// consumer to drop their records.
//
// # Replication
//
// A partition serves as a leader or as a follower; the server decides
// which, and drives it. A leader with followers hands its high watermark to
// its replica manager (SetHighWatermarkManaged): Append leaves it, and
// AdvanceHighWatermark moves it forward, never back, to the smallest log
// end of the in-sync replicas. A follower appends its leader's batches as
// they are, offsets and leader epochs kept (AppendReplica; AppendReplicaAt
// refuses them if the partition's leader epoch moved since the fetch was
// made, checked and appended under one lock), takes its high
// watermark from its leader's (SetHighWatermark), cuts its log back where
// it diverged (TruncateTo, which rebuilds the producers' state from the
// batches left), or empties it and starts again at its leader's log start
// (TruncateFullyAndStartAt).
//
// # Leader epochs
//
// Each partition keeps its leader-epoch cache (Kafka's
// LeaderEpochFileCache, KIP-101; epochs.go): for each leader epoch that
// wrote batches, the offset of its first batch. An entry is made when a
// batch of a larger epoch than the latest is appended, by Append or
// AppendReplica alike, and when a broker starts leading at a new epoch
// (AssignLeaderEpoch, at its log end). TruncateTo drops the entries cut,
// TruncateFullyAndStartAt empties the cache, and retention moves the first
// epoch's start to the new log start. EndOffsetForEpoch answers
// OffsetForLeaderEpoch as Kafka's endOffsetFor does: where an epoch ends
// in this log, which is what a follower truncates to (KIP-101, KIP-279)
// and a consumer checks its position against (KIP-320). A Log that is an
// EpochCheckpointer (logdir's) keeps the cache across restarts; as every
// batch is read when a log opens, the cache is rebuilt from the batches
// then and the checkpoint checked against it. A topic records its replication factor and
// its min.insync.replicas (CreateTopicSpec, which also takes the topic id
// a cluster's controller chose); the storage enforces neither, the server
// does.
//
// # Producers
//
// Each partition remembers, per producer id (idempotent or
// transactional), its epoch and its last few batches (five by default:
// the most a producer keeps in flight). A retried batch is answered with
// the offset it was first written at; a gap in sequence numbers or a stale
// epoch is refused (see producers.check for Kafka's rules). A producer's
// first transactional batch here starts its transaction (Kafka's
// currentTxnFirstOffset), and its marker, which a transaction
// coordinator writes (AppendMarker), ends it; meanwhile a batch of it
// that is not transactional is refused (ErrInvalidTxnState), and a marker
// of an older epoch, or from an older coordinator than the producer's
// last marker's, is refused (ErrInvalidProducerEpoch,
// ErrCoordinatorFenced). A marker at a newer epoch (transaction version
// 2 ends every transaction at the producer's epoch+1, KIP-890 part 2)
// moves the producer to it, and its next transaction starts there at
// sequence 0. The broker's coordinators write for a
// producer too (AppendCoordinator: a transaction's offset commits, at
// sequence -1), checked for its epoch and transaction, not its sequences.
// An idle producer expires, unless its transaction is open. Producers and
// OngoingTxn tell the admin APIs and KIP-890's verification what they
// hold; a follower records all of it from its leader's batches, so that
// it holds the same once it leads.
//
// Kafka keeps its producer state in snapshots and its aborted index in
// .txnindex files; here both are rebuilt from the batches when a log
// opens (every batch is read then anyway, see package logdir) and after a
// truncation: a transaction whose marker was cut is open again.
//
// # Retention
//
// A partition keeps batches for retention.ms after their max timestamp and
// up to retention.bytes, and deletes older and excess ones from the front
// in whole segments, as Kafka deletes segment files: a segment goes only
// when all of it may, so the log start moves to the base of the first
// segment kept. In the memory log every batch is a segment. Retention is
// applied on every append to the partition appended to, and to every
// partition by a goroutine every retention check interval, which Close
// stops. DeleteRecords and AdvanceLogStart move the log start to exactly
// the offset their caller names, never past the high watermark, and
// delete the segments wholly before it: a DeleteRecords request on the
// leader, a compacted offsets partition's leader, and a follower taking
// its leader's log start use them. A Log that is a LogStartCheckpointer
// (logdir's) keeps a log start that its first segment does not say across
// restarts.
//
// # Compaction
//
// A topic whose cleanup.policy has compact is cleaned by key (Kafka's log
// cleaner): each key's latest value is kept, at its own offset, and
// tombstones for delete.retention.ms after their first cleaning; retention
// applies only if the policy has delete too. A client's record without a
// key is refused on such a topic. The store's cleaner (cleaning.go) runs a
// pass every log.cleaner.backoff.ms on the library's timer, over the
// partitions whose dirty ratio reaches min.cleanable.dirty.ratio (or whose
// dirty records passed max.compaction.lag.ms), the dirtiest first; a
// partition's pass (cleaner.go) cleans its sealed segments below the last
// stable offset and older than min.compaction.lag.ms, decompressing
// records to read their keys and compressing what it keeps with the
// batch's codec (cleanbatch.go), and swaps each segment in whole
// (Log.Replace). Aborted transactions' records go, and markers once
// nothing of their transaction is left (markers.go). Each
// replica cleans its own log; a follower takes its leader's gaps.
//
// # Logs and the catalog
//
// The batches themselves sit behind the Log interface: the in-memory log
// here, or the segment-file log of package logdir, which a LogOpener
// opens. Partition rebuilds its state (the high watermark, which is the
// log end, producers, transactions and the aborted index, the largest
// timestamp) from the log's batches when it opens one that is not
// empty: after a restart, an idempotent producer's retry of a batch
// acknowledged before it is still recognised, and an open transaction
// still holds the last stable offset back.
//
// With a Catalog (WithCatalog; logdir's Dir is one), topics survive the
// store: New opens every topic the catalog lists, with its id, partitions
// and configs, and fails if a log cannot be opened; CreateTopic records a
// topic before publishing it, DeleteTopic forgets it before removing its
// logs. Creation opens its logs outside the store's lock, the name
// reserved meanwhile.
//
// # Growing a topic
//
// A Topic, its Partitions slice included, is immutable once published,
// and read without a lock. AddPartitions (Kafka's CreatePartitions)
// publishes a new Topic in the old one's place, with the old one's
// partitions and the new ones; a reader holding the old one sees the
// count it looked up (grow.go says why this is race-free). Retention,
// deletion, lookups and the partition limit see the new partitions from
// the swap on, and the catalog records the new count.
//
// # Changing a topic's config
//
// A topic's config (Topic.Config) is shared by every generation of it and
// read without a lock; AlterTopicConfig (Kafka's AlterConfigs) records a
// new one in the catalog, then swaps it in whole behind an atomic
// pointer, so that the next append sees the new max.message.bytes, the
// next sweep the new retention, the next acks=all check the new
// min.insync.replicas, on every partition at once (configs.go says why
// this is race-free).
//
// # Size
//
// About 5k lines, above the 3k this project's packages keep to: one
// concept a file (a batch's validation, control batches, the partition and
// its offsets, leader epochs, producers' sequences, transactions,
// retention, compaction, the catalog), each the partition's, under the
// partition's one lock; the on-disk log is package logdir already. The
// cleaner is the next to move into a package of its own, behind a
// partition's read and swap.
//
// # Lock order
//
// A topic's alter lock (its growths, config changes and deletion,
// grow.go), then
// Store.mu, then Partition.mu. A Log is called only under its partition's
// lock. The log cleaner (cleaner.go) takes one partition's lock at a time,
// never with another held, and holds none while it decodes and rewrites.
// No lock is held while calling out of the package, so a caller may hold
// its own lock (a delayed fetch's) around any call here.
package storage
