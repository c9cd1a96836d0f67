// Package logdir keeps the broker's partitions on disk, in a log dir laid
// out as Kafka lays out one of its log.dirs: each partition's log is a
// series of append-only segment files with sparse offset indexes, recovered
// when the broker starts again. Log implements storage.Log; Dir.OpenLog is
// the storage's LogOpener.
//
// # Layout
//
//	DIR/
//	  .lock                     flock'ed while a broker has the directory open
//	  .kafka_cleanshutdown      present after a clean shutdown, until the next Open
//	  recovery-point-offset-checkpoint  each partition's recovery point: fsynced below it
//	  meta.properties           version=1, cluster.id, node.id
//	  topics.json               the topic catalog: names, ids, partitions, configs
//	  producer-ids              the first producer id not yet reserved
//	  <topic>-<partition>/
//	    partition.metadata      "version: 0", "topic_id: <id>": whose directory this is
//	    leader-epoch-checkpoint "0", the count, then "epoch start_offset" lines (epochs.go)
//	    log-start-offset-checkpoint "0", then the log start, when DeleteRecords put it past the first segment's base (logstart.go)
//	    00000000000000000000.log    segment: batches back to back
//	    00000000000000000000.index  its offset index
//	    00000000000000004242.log    the next segment, whose first offset is 4242
//	    00000000000000004242.index
//
// # Topics
//
// The directory's Dir is also the storage's Catalog: topics.json lists
// every topic with its id, partition count and configs, rewritten whole
// and atomically (a temporary file, fsynced, renamed over the old one, the
// directory fsynced) on each creation and deletion. A topic is in the
// catalog before its partitions' directories are made, and out of it
// before they are deleted; at start, directories the catalog does not
// account for are what a crash left of a deletion, and are deleted.
// producer-ids reserves the producer ids handed out, block by block, so
// that a restarted broker never hands one out twice.
//
// # Segments
//
// A segment's .log holds v2 record batches exactly as the log serves them
// (as the producer sent them, with the base offset and leader epoch the log
// gave them), back to back, nothing between; a file is named by the base
// offset of its first batch, zero-padded to 20 digits. Batches are
// appended to the last segment, the active one. The active segment is
// rolled (sealed, and a new one started at the log end) before an append
// that would take it past log.segment.bytes, or when it is older than
// log.roll.ms, or when the batch's offsets would overflow its index; a
// batch larger than a segment has one of its own. Sealing fsyncs the
// segment, and the new file's name is made durable (an fsync of the
// directory) before anything is written to it.
//
// An active segment keeps its two files open. A sealed one's .log is kept
// open by the directory's cache of sealed files (WithOpenSegments), which
// closes the least recently read past its size and opens one again when
// it is read: the directory needs two file descriptors per partition and
// the cache's, however many segments it holds (files.go).
//
// # Offset index
//
// A segment's .index is Kafka's format: 8-byte entries, each two
// big-endian 32-bit integers, the last offset of a batch minus the
// segment's base, and the position in the .log where that batch starts. A
// batch gets an entry when more than log.index.interval.bytes were
// appended since the last entry (the first batch needs none: it is at 0).
// A read finds its segment by base offset (binary search), the position by
// the last entry at or before its offset (binary search), and scans the
// batch headers from there: about log.index.interval.bytes at most. The
// entries are also kept in memory, 8 bytes per interval of log.
//
// # Retention
//
// DropBefore deletes whole segment files, oldest first, those whose
// batches all end before the offset retention chose; the log start is the
// base of the first segment kept. When every batch goes, an empty active
// segment is rolled at the log end first, as Kafka does, so that the log
// keeps its offsets across a restart without a checkpoint file. A log
// start that DeleteRecords put inside the first segment kept is in the
// partition's log-start-offset-checkpoint, written before the deletion is
// answered (Kafka writes one file for the log dir, lazily).
//
// # Truncation
//
// A follower cuts its log back to where it agrees with its leader's
// (TruncateTo), or empties it and starts again at its leader's log start
// (Reset). TruncateTo deletes the segments after the one holding the
// offset, newest first, each deletion made durable before the next, then
// cuts that segment's .log and .index and fsyncs both; it becomes the
// active segment. Reset deletes every segment but the first likewise,
// empties the first, and renames its files to the new start. Every step
// leaves segments that follow each other without a gap, so a crash at any
// point leaves a log that opens: the truncation done, or a prefix of the
// log as it was, which the same call finishes (see truncate.go).
//
// # Recovery
//
// Opening a partition's directory reads every segment in offset order and
// checks every batch: framing, magic, record count, CRC-32C, and offsets
// that follow on from the segment's base and from batch to batch (package
// internal/batchfile). Then:
//
//   - The active segment may end in a torn tail: a batch partly written
//     when the process died, or garbage the disk kept after a power loss.
//     After such an unclean shutdown, the file is cut before the first
//     batch that is not whole and valid, with a warning giving the
//     position and the bytes dropped, provided that batch starts at or
//     past the log's recovery point (below it, everything was fsynced: a
//     bad batch there is corruption). After a clean shutdown (Close wrote
//     .kafka_cleanshutdown, which Open deletes), no tail is torn: any bad
//     batch refuses the open, as Kafka's clean-shutdown marker makes it
//     skip recovery (see clean.go). Nothing corrupt is ever served.
//   - A log that ends before its recovery point lost fsynced files: the
//     open fails (ErrInconsistent).
//   - A bad batch that a valid batch follows, or any bad batch in a sealed
//     segment (fsynced when it was sealed), is not a torn write: opening
//     fails with an error wrapping storage.ErrCorruptBatch that names the
//     file, the position and the offset, rather than drop acknowledged
//     batches to get past it.
//   - Segments must follow each other without a gap, and a partition
//     directory made before must still hold one: there is always an active
//     segment, so none means its files were lost (ErrInconsistent), not
//     that the partition is empty.
//   - Each index is kept if every entry points at the start of the batch
//     it names, and rebuilt from its segment otherwise (missing, torn,
//     wrong).
//   - Leftovers of operations a crash cut short are finished or removed:
//     an .index without its .log, a .tmp file of an atomic write, a
//     partition directory being deleted ("-delete").
//
// The active segment is then fsynced, so the log starts with nothing
// unflushed. Partition then rebuilds its state from the batches (the high
// watermark is the log end; producers' sequences, epochs and open
// transactions; the aborted-transaction index, from the markers; the
// largest timestamp). Scan reads a control batch whole, for its type is in
// its record, not its header. Kafka checks only the segments after its last flush (its
// recovery point) and skips even those after a clean shutdown; this log
// checks them all, a sequential read of the whole log at every start, so
// that a corrupt batch is found before it is served rather than by a
// consumer. The price is start-up time proportional to the data kept.
//
// A batch's append time is not stored: BatchInfo.AppendTime read back from
// a segment is the segment's last append (its file's modification time
// after a restart), as Kafka falls back to a segment's modification time.
// Retention of batches without timestamps, and the expiry of idle
// producers rebuilt after a restart, count from it.
//
// # Flushing and what survives what
//
// An append is in the kernel's page cache (a pwrite) before Append
// returns, and so before a produce is acknowledged, even with acks=all. It
// survives the death of the process, kill -9 included: the kernel writes
// the page cache back. It survives a power loss or a kernel crash only
// once it is fsynced, which happens:
//
//   - after log.flush.interval.messages records are appended since the
//     last fsync, inside the append that reaches it: with 1, every append
//     is fsynced before it is acknowledged, and survives a power loss;
//   - every log.flush.interval.ms, by the directory's flusher goroutine: a
//     power loss may then lose up to that long of acknowledged appends;
//   - when a segment is rolled, and when a log is closed.
//
// Both flush settings default, as in Kafka, to never: the OS writes back
// when it likes, and a power loss may lose whatever it had not written,
// acknowledged or not. Kafka makes that safe by replicating to other
// brokers before it acknowledges acks=all; a single broker has nothing but
// its own disk, so set log.flush.interval.messages=1 where power losses
// matter, and pay an fsync per produce. A write or fsync that fails makes
// the log refuse every later append (its disk's state is unknown; Kafka
// takes the log dir offline) until the broker restarts.
//
// # Leader epochs
//
// Each partition directory keeps Kafka's leader-epoch-checkpoint, the
// partition's leader-epoch cache (see package storage), replaced
// atomically whenever the cache changes. Storage rebuilds the cache from
// the batches when it opens the log (every batch is read then anyway) and
// checks the checkpoint against it: entries at or past the log end, as a
// torn tail cut leaves them, are dropped as Kafka's recovery drops them,
// and a checkpoint that still disagrees is rewritten from the batches.
//
// # Deleting a topic
//
// Log.Remove renames the partition's directory with a "-delete" suffix,
// makes the rename durable, then deletes it; a crash in between leaves the
// suffixed directory, which Open removes. A directory whose
// partition.metadata names another topic id is a deleted topic's of the
// same name, and OpenLog deletes it before making the new partition's.
//
// # Lock order
//
// A Log's mu is never taken with Dir.mu held, nor Dir.mu with it (the
// flusher and Close copy the set of logs under Dir.mu, then call them
// without it). Partition's lock is taken before a Log's mu. Dir.catalogMu
// and Dir.idsMu are leaves but for Dir.removeDir (which takes no lock);
// Dir.pointsMu and the file cache's mu are leaves, taken under a Log's mu.
//
// # Not implemented
//
// Kafka's time index (.timeindex: ListOffsets by timestamp scans the batch
// headers), producer state snapshots and the transaction index
// (.snapshot, .txnindex: both are rebuilt from the batches), skipping
// recovery of the segments before the recovery point (every batch is
// checked at every start), several log dirs, index preallocation and mmap,
// and compaction.
package logdir
