package storage

import (
	"io"
	"time"
)

// A Log holds one partition's record batches in offset order: the part of a
// partition that the durable, segment-file log (package logdir) replaces.
// It knows nothing of high watermarks, producers or retention rules:
// Partition keeps those.
//
// Partition calls Append, DropBefore, TruncateTo, Reset, Segments, Close
// and Remove under its write lock, and Read, Scan and Bounds under its read lock, so those three
// may run concurrently with each other, never with the others. A Log that
// also works on its own behalf (logdir's flusher) guards itself.
//
// The in-memory log (NewMemLog) is the default. Partition rebuilds its
// producer state from Scan when it opens a log that is not empty, and
// after TruncateTo or Reset.
type Log interface {
	// Append adds b, whose base offset is the log's end offset, or
	// past it: a follower takes its compacted leader's batches with the
	// gaps the cleaner left between them.
	Append(b *Batch) error

	// Read appends to dst the bytes of the batches from the one holding
	// offset on, stopping before the first batch that reaches limit (an
	// offset: the high watermark, say) or that would take the bytes read
	// past maxBytes, except that with minOne the first batch is read
	// whatever its size.
	Read(dst []byte, offset, limit int64, maxBytes int, minOne bool) ([]byte, error)

	// Scan calls fn with the info of each batch, from the one holding
	// offset on, until fn returns false.
	Scan(offset int64, fn func(BatchInfo) bool) error

	// Segments calls fn with each of the log's segments that holds a
	// batch, oldest first, until fn returns false: the units DropBefore
	// deletes, which retention weighs whole, as Kafka's retention weighs
	// segment files. In the memory log every batch is a segment.
	Segments(fn func(Segment) bool) error

	// DropBefore deletes, oldest first, every segment whose batches all
	// end before offset; a segment holding offset, or any batch at or
	// after it, is kept whole. The start offset becomes the base offset
	// of the first batch kept, or the end offset when none is: it never
	// passes offset, and stays below it when offset falls inside a
	// segment, as Kafka's log start stays at the base of the first
	// segment its retention keeps. An offset past the end is an error.
	DropBefore(offset int64) error

	// TruncateTo deletes, from the end, every batch whose base offset is
	// at or after offset, so that the end offset becomes offset: a
	// follower's log cut back to where it agrees with its leader's
	// (Kafka's truncateTo). offset must be a batch boundary, the base
	// offset of a batch or the end offset (which deletes nothing);
	// inside a batch is an error wrapping ErrNotBatchBoundary, before
	// the start or past the end one wrapping ErrOffsetOutOfRange, and
	// the log is left as it was. A durable log has made the truncation
	// durable before it returns.
	TruncateTo(offset int64) error

	// Reset deletes every batch and leaves an empty log whose start and
	// end offsets are both start, which may be anywhere, before, inside
	// or after the log's offsets (Kafka's truncateFullyAndStartAt, for
	// a follower whose log is all behind its leader's log start). A
	// negative start is an error. A durable log reopens empty at start.
	Reset(start int64) error

	// Replace puts kept in place of the batches of seg, a segment that
	// Segments reported and not the last one (the log cleaner never
	// touches the active segment): kept are those batches as the
	// cleaner rewrote them, in offset order, each at its base offset and
	// spanning its offsets as before, with fewer records; the batches it
	// dropped are left out, which leaves gaps in the offsets. With kept
	// empty the segment goes, but the log's start offset stays where it
	// was, as Kafka's log start does not move for compaction. A segment
	// no longer as seg says (a truncation or retention took it
	// meanwhile) is an error wrapping ErrSegmentChanged, and the log is
	// left as it was. A durable log writes the new segment aside and
	// swaps it in: a crash leaves the old segment or the new one, whole.
	Replace(seg Segment, kept []*Batch) error

	// Bounds returns the log's start and end offsets and its size in bytes.
	Bounds() Bounds

	// Close releases the log. A durable log keeps its batches for the
	// next open; the memory log lets them go.
	io.Closer

	// Remove closes the log and deletes its batches for good, wherever
	// they are kept: its topic was deleted.
	Remove() error
}

// Bounds are a log's extent: its first offset, the offset the next batch
// will get, and the bytes held.
type Bounds struct {
	Start, End int64
	Size       int64
}

// A Segment is a run of a log's batches that retention keeps or deletes as
// one (Kafka's log segment).
type Segment struct {
	BaseOffset int64 // its first batch's base offset
	NextOffset int64 // the offset after its last batch
	Size       int64 // bytes
	// MaxTime is the largest retention time of its batches, in ms since
	// the epoch: a batch's max timestamp, or for a batch without
	// timestamps when it was appended, as BatchInfo.AppendTime tells.
	MaxTime int64
}

// LogOpener opens the log of a topic's partition; WithLogOpener sets it. A
// durable opener returns the batches the partition held when it was last
// closed.
type LogOpener func(topic string, id TopicID, partition int32) (Log, error)

// A SegmentExtentKeeper is a Log whose cleaned segments must end where
// they did (logdir's, whose recovery checks that its segments follow each
// other): the log cleaner keeps each segment's last batch, emptied of its
// records if none stays, as Kafka keeps a producer's last batch. The
// memory log is none: it lets a batch whose records all went go whole.
type SegmentExtentKeeper interface {
	KeepsSegmentExtents() bool
}

// A StagedReplacer is a Log that writes Replace's new segment aside before
// the swap: the cleaner calls StageReplace without its partition's lock,
// so that appends and fetches do not wait for the writing, then Commit
// under the lock (or Abort). The Log guards itself meanwhile, as logdir's
// does; the segment may have gone by the Commit, which then fails with
// ErrSegmentChanged, as Replace does.
type StagedReplacer interface {
	StageReplace(seg Segment, kept []*Batch) (StagedReplace, error)
}

// A StagedReplace is a Replace written aside: Commit swaps it in, Abort
// drops it; exactly one of them is called, once.
type StagedReplace interface {
	Commit() error
	Abort()
}

// A SegmentRoller is a Log whose segments roll at a size and an age it is
// told (logdir's): a topic's own segment.bytes and segment.ms, which the
// log cleaner needs to find sealed segments soon enough. Partition tells
// it before an append when the topic's config changed them; zero is the
// log's own.
type SegmentRoller interface {
	SetSegmentRoll(bytes int64, age time.Duration)
}

// A CleanerCheckpointer is a Log that keeps where the log cleaner's last
// pass ended across restarts (logdir's), so that the first pass after a
// restart maps only what came since, not the whole log again. Partition
// calls it under its write lock: ReadCleanedTo when it opens the log,
// WriteCleanedTo after a pass, and after a truncation that cut below it.
// What it keeps only saves work: a lost or stale one makes a pass map
// more, or keep a few superseded records longer, never drop a latest one.
type CleanerCheckpointer interface {
	ReadCleanedTo() (offset int64, found bool, err error)
	WriteCleanedTo(offset int64) error
}
