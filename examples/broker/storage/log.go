package storage

import "io"

// A Log holds one partition's record batches in offset order: the part of a
// partition that a durable, segment-file implementation would replace. It
// knows nothing of high watermarks, producers or retention rules: Partition
// keeps those and calls the Log under its own lock, so a Log needs no lock
// of its own for calls from one Partition.
//
// The in-memory log (NewMemLog) is the default. A segment-file log would
// keep the same batches in append-only files with an offset index, and
// recover its bounds and batches on open; Partition rebuilds its producer
// state from Scan when it opens a log that is not empty.
type Log interface {
	// Append adds b, whose base offset is the log's end offset.
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

	// DropBefore removes the batches that end before offset, which becomes
	// the log's start offset (offset is a batch's base offset or the end
	// offset).
	DropBefore(offset int64) error

	// Bounds returns the log's start and end offsets and its size in bytes.
	Bounds() Bounds

	io.Closer
}

// Bounds are a log's extent: its first offset, the offset the next batch
// will get, and the bytes held.
type Bounds struct {
	Start, End int64
	Size       int64
}

// LogOpener opens the log of a topic's partition; WithLogOpener sets it.
type LogOpener func(topic string, id TopicID, partition int32) (Log, error)
