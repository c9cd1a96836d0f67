// Package records is the format of Kafka's __consumer_offsets topic, as
// the group coordinator writes it there and reads it back: the records of
// a group's commits, transactional or not, offset deletions and group
// deletions, encoded by kmsg, and their replay, transactions' markers
// included, into the groups they add up to.
//
// # Records
//
// A key's version says what it keys (0 and 1: a committed offset, 2: a
// group's metadata); a null value is a tombstone:
//
//   - key OffsetCommitKey v1 (group, topic, partition), value
//     OffsetCommitValue v3 (offset, leader epoch, metadata, commit time),
//     or v1 (with an expiry time of its own instead of a leader epoch) for
//     a commit that set its retention, as Kafka writes them; a tombstone:
//     the offset was deleted or expired;
//   - key GroupMetadataKey v2 (group), value GroupMetadataValue v3: the
//     protocol type, generation, protocol, leader, the time the group
//     entered its state, and each member (member id, group instance id,
//     client id and host, rebalance and session timeouts, its
//     subscription for the protocol and its assignment), written when a
//     rebalance completes and when the group becomes Empty, as Kafka's
//     storeGroup writes it, so that members go on at a coordinator that
//     takes the group over; a commit to a group whose metadata was not
//     written yet writes one with the protocol type alone. Versions 0 to
//     4 are read. A tombstone: the group is gone.
//
// Key versions 848 and 849 are this broker's own: a KIP-848 consumer
// group and one of its members (consumer.go), made of kmsg's consumer
// group RPC messages because kmsg has no type for Kafka's ConsumerGroup*
// records (key versions 3 to 8, refused here). Key versions 932 and 933
// are a KIP-932 share group and one of its members (share.go), made of
// kmsg's share group RPC messages likewise, for Kafka's ShareGroup*
// records (key versions 9 to 13, refused here). A Replay hands them over
// (ConsumerGroups, ShareGroups) and compacts them with the rest.
//
// The latest record of a key wins; times are wall-clock milliseconds.
// Each change is one batch (Batch): uncompressed, from no producer, so
// that a change is whole or absent in the partition.
//
// # Transactions
//
// A transaction's offsets (TxnOffsetCommit, KIP-98) are the same offset
// records in a transactional batch of its producer id and epoch, without
// a sequence (TxnBatch), as Kafka's coordinator writes them. They are
// pending until the producer's marker follows them in the partition: a
// control batch of the producer, written by the transaction
// coordinator's WriteTxnMarkers, whose one record's key is a
// ControlRecordKey of type COMMIT (1) or ABORT (0). A commit makes each
// pending offset the group's committed one, unless the committed one's
// record is the newer (a commit made after the transaction's, before its
// marker, wins), as Kafka replays a marker; an abort drops them. A
// tombstone of a partition drops the offsets pending of it, a group's
// all of the group's.
//
// # Replay
//
// A Replay applies batches in log order and returns the groups that are
// left (Groups, and the consumer and share groups, ConsumerGroups and
// ShareGroups), each offset with its record's position in the log, and
// the offsets still pending, by producer: a group with neither offsets,
// pending ones nor live metadata is gone. A batch that holds a record
// this package does not write (nor a transaction's marker) fails the
// replay with ErrRecord, rather than forget offsets that clients were
// told are committed. It counts the records applied, markers included,
// and the live ones (the latest value of each key, tombstones and
// pending offsets left out); the others are dead.
//
// # Rewrite
//
// Kafka compacts the topic by key. Here a Replay writes its live records
// again (Rewrite), in batches after the log's: each record holds its key's
// latest value, so a replay from anywhere at or before the rewrite's first
// batch, through any prefix of it, gives the same groups, and the records
// before it may go. A rewrite is thus the one change that may span
// batches. It leaves pending offsets out, and places the committed ones
// after them: it must not be written while a transaction is open in the
// partition (the runtime's compaction waits for its marker).
package records
