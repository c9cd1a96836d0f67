// Package cache keeps, for each partition the proxy tails, the record
// batches its upstream long poll read most recently, as the bytes upstream
// sent, bounded by size, and what upstream last said of the partition (high
// watermark, last stable offset, log start).
//
// # What a Partition answers
//
//	        from                       end          high watermark
//	evicted  |  batch | batch | batch   |   (tailer behind) |
//
// A Partition starts empty at the offset its tailer starts reading from, and
// each Append adds the whole batches of one upstream fetch, in offset order.
// It answers a read at offset o when from <= o <= max(end, high watermark)
// and o is not below the log start: with the batch holding o (or the first
// after it, where compaction left a gap) and the batches after it, or with
// nothing yet when o is at the end, which the proxy's fetch then waits on.
// Any other offset is a miss: the proxy reads it from upstream. Batches are
// whole and untouched, as Kafka returns them: a compressed batch stays
// compressed, and a read may start in the middle of a batch, which clients
// handle by skipping the records before their offset.
//
// A read_committed read is answered only where the answer is exact without
// the aborted-transaction index, which a read_uncommitted tail does not get:
// from batches that are neither transactional nor control batches, below
// the last stable offset. A read whose first batch is transactional is a
// miss; one that reaches such a batch stops before it.
//
// # Bounds
//
// When the bytes held pass the limit, the oldest batches go, down to one:
// the newest batch stays whatever its size, so a partition holds at most
// max(limit, its newest batch) bytes of batches. Each Append copies its
// batches out of the upstream response into one buffer of their own, so a
// partition pins no other partition's bytes; a buffer is freed once its
// last batch is evicted and no response being written still holds it, so
// the memory of a partition is bounded by its limit plus one fetch's worth
// (tail.fetch.partition.max.bytes).
//
// Reads return a slice of that buffer when the batches they return sit
// next to each other in it (the common case: one fetch's batches), and a
// copy otherwise. The bytes are never written after an Append, so readers
// share them without a lock.
//
// # Concurrency
//
// A Partition is safe for concurrent use: one tailer appends, any number of
// fetches read. Its one lock is a leaf: it is never held while calling out.
package cache
