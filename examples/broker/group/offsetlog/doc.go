// Package offsetlog keeps a group coordinator's committed offsets in a
// file, as Kafka keeps them in its __consumer_offsets topic: an
// append-only log of records, replayed when the broker starts and
// compacted now and then. Log implements group.OffsetStore; the broker
// opens it in the __consumer_offsets directory of its log dir.
//
// # Format
//
// The file, offsets.log, is a sequence of v2 record batches, the format of
// a partition's segments, built with kmsg: uncompressed, from no producer,
// base offsets counting records from 0, each batch one change (a commit,
// a deletion) so that a change is whole or absent after a crash. The
// records are __consumer_offsets' own:
//
//   - key OffsetCommitKey v1 (group, topic, partition), value
//     OffsetCommitValue v3 (offset, leader epoch, metadata, commit time), or
//     v1 (with an expiry time of its own instead of a leader epoch) for a
//     commit that set its retention, as Kafka writes them; a null value is
//     a tombstone: the offset was deleted or expired;
//   - key GroupMetadataKey v2 (group), value GroupMetadataValue v0 holding
//     the protocol type alone; a null value: the group is gone.
//
// The latest record of a key wins; times are wall-clock milliseconds.
//
// # Replay
//
// Open reads the file through the check a partition's segments get
// (internal/batchfile): framing, CRC-32C, offsets. A torn tail, the change
// being written when the process died, is cut with a warning; a bad batch
// followed by a valid one, or a record this log does not write, fails Open
// with the position, rather than forget offsets that clients were told
// are committed.
//
// # Compaction
//
// Once the dead records (overwritten, deleted) reach WithCompactAfter and
// outnumber the live ones, the file is rewritten with the live records
// alone, atomically (temporary file, fsync, rename, directory fsync), in
// the write that tipped it: a change costs O(1) amortised, and the file
// stays within about twice the live state plus the threshold.
//
// # Durability
//
// As a partition's log (see package logdir): a change is in the page cache
// before the coordinator answers, which survives kill -9; it survives a
// power loss once fsynced, after every change with
// log.flush.interval.messages=1, within log.flush.interval.ms otherwise, at
// a compaction and at Close. A failed write or fsync makes the log refuse
// every later change, which the coordinator answers NOT_COORDINATOR.
//
// # Lock order
//
// Log.mu is a leaf: the coordinator calls the log with a group's mutex
// held, and the log calls nothing out. The flusher fsyncs outside it.
package offsetlog
