package storage

import (
	"fmt"
	"sort"
)

// Transactions (KIP-98), as a partition's leader and followers keep them:
//
//	    log start      first unstable      high watermark      log end
//	        |  ...  T1 ...  |  T2 ... M1 ...  T3 ...  |  ... M2 ...  |
//
// A producer's transaction starts in a partition at its first
// transactional batch there, and ends at its marker (AppendMarker: a
// commit or an abort, written by its transaction coordinator). Until then
// its first offset is undecided, and a read_committed consumer stops
// before it: the last stable offset is the smallest of the high watermark
// and the first offsets of every open transaction, and of every complete
// one whose marker the high watermark has not passed yet (Kafka keeps a
// transaction unstable until its marker is replicated, so that a consumer
// never sees a decision a new leader may not have). Above, T1 and T3 are
// open, T2's marker M1 is below the high watermark: the last stable offset
// is T1's first offset.
//
// An aborted transaction goes into the partition's aborted index (Kafka's
// TransactionIndex, its AbortedTxn entries): its producer, first offset,
// marker offset, and the last stable offset when it completed, which
// bounds the index's scan. A read_committed read returns the entries that
// overlap what it read (ReadResult.Aborted), so that the consumer drops
// those records; Kafka writes the index in .txnindex files, this
// partition rebuilds it from its batches when it opens its log or
// truncates it, as it rebuilds its producers.

// AbortedTxn is an aborted transaction, as the aborted index keeps it
// (Kafka's AbortedTxn) and a Fetch response's aborted_transactions needs
// it (ProducerID, FirstOffset).
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64 // the offset of its first batch in the partition
	LastOffset  int64 // the offset of its marker
	// LastStableOffset is the last stable offset when it completed, as
	// Kafka computes it for the index: the first offset of the earliest
	// transaction of another producer still open then, or the offset
	// after the marker. Every entry after this one starts at or after
	// it.
	LastStableOffset int64
}

// txns is a partition's transactions in offset order: Kafka's
// ProducerStateManager's ongoingTxns and unreplicatedTxns, and the
// TransactionIndex. Which producer's transaction is open is producers';
// this keeps the order between them, so that the last stable offset is
// O(1) and an append O(1) amortised, with no scan of the producers.
//
// REQUIRES: the partition's mu held, for every method.
type txns struct {
	// ongoing holds the first offsets of the open transactions.
	ongoing offsetQueue
	// unstable holds those of the open transactions, and of the complete
	// ones whose marker is not below the high watermark: the smallest
	// is the first unstable offset.
	unstable offsetQueue
	// completing is the complete transactions still unstable, by marker
	// offset: markers are appended in offset order, so those the high
	// watermark passes leave from the front.
	completing []completedTxn
	// aborted is the aborted index, by LastOffset (marker offset).
	aborted []AbortedTxn
}

// completedTxn is a transaction complete at its marker, marker.
type completedTxn struct{ first, marker int64 }

// begin notes a transaction starting at first, the offset of a batch just
// appended: larger than every offset noted before. O(1) amortised.
func (t *txns) begin(first int64) {
	t.ongoing.add(first)
	t.unstable.add(first)
}

// complete notes that producer id's transaction, open since first, was
// completed by its marker at offset marker, an abort if abort; an abort
// goes into the index. It stays unstable until stabilize passes the
// marker. O(log transactions) amortised.
func (t *txns) complete(id, first, marker int64, abort bool) {
	t.ongoing.remove(first)
	if abort {
		// The earliest transaction still open is another producer's:
		// a producer has one open at a time.
		lso := marker + 1
		if next, ok := t.ongoing.min(); ok {
			lso = next
		}
		t.aborted = append(t.aborted, AbortedTxn{ProducerID: id, FirstOffset: first, LastOffset: marker, LastStableOffset: lso})
	}
	t.completing = append(t.completing, completedTxn{first: first, marker: marker})
}

// stabilize makes stable the complete transactions whose marker is below
// hw, the high watermark (Kafka's onHighWatermarkUpdated). A high
// watermark moving back (a follower's, after a change of leader) makes
// nothing unstable again, as in Kafka. O(transactions made stable, log
// transactions).
func (t *txns) stabilize(hw int64) {
	n := 0
	for n < len(t.completing) && t.completing[n].marker < hw {
		t.unstable.remove(t.completing[n].first)
		n++
	}
	if n > 0 {
		clear(t.completing[:n])
		t.completing = t.completing[n:]
	}
}

// firstUnstable returns the first offset of the earliest unstable
// transaction, with ok false when none is. O(1).
func (t *txns) firstUnstable() (int64, bool) { return t.unstable.min() }

// dropBefore forgets the aborted transactions whose marker is before
// start, the new log start: a read never starts before it. The open
// transactions stay, even those whose first batches went: their markers
// are still to come. O(entries dropped).
func (t *txns) dropBefore(start int64) {
	n := sort.Search(len(t.aborted), func(i int) bool { return t.aborted[i].LastOffset >= start })
	if n > 0 {
		t.aborted = t.aborted[n:]
	}
}

// abortedIn returns the aborted transactions that overlap a read of the
// offsets from offset to upTo (excluded), or nil: those whose marker is
// at or after offset and whose first offset is before upTo, as Kafka's
// collectAbortedTransactions finds them. The scan stops at the first entry
// whose LastStableOffset reaches upTo: none after it starts before.
// O(log entries + entries returned).
func (t *txns) abortedIn(offset, upTo int64) []AbortedTxn {
	i := sort.Search(len(t.aborted), func(i int) bool { return t.aborted[i].LastOffset >= offset })
	var out []AbortedTxn
	for _, a := range t.aborted[i:] {
		if a.FirstOffset < upTo {
			out = append(out, a)
		}
		if a.LastStableOffset >= upTo {
			break
		}
	}
	return out
}

// offsetQueue is a set of offsets added in increasing order and removed in
// any order, whose smallest is found in O(1): a transaction starts at the
// log end, after every one before it, and ends in any order. A removal
// marks its offset, and the marked ones leave from the front; those marked
// in the middle, behind a transaction that stays open, are swept out when
// they outnumber the others, so that it holds at most about twice the
// offsets still in it.
type offsetQueue struct {
	offs []queuedOffset
	live int
}

type queuedOffset struct {
	off  int64
	gone bool
}

// add adds off, larger than every offset added before: a programmer error
// otherwise. O(1) amortised.
func (q *offsetQueue) add(off int64) {
	if n := len(q.offs); n > 0 && q.offs[n-1].off >= off {
		panic(fmt.Sprintf("storage: offset %d queued after %d", off, q.offs[n-1].off))
	}
	q.offs = append(q.offs, queuedOffset{off: off})
	q.live++
}

// remove removes off, if it is in the queue. O(log n) amortised.
func (q *offsetQueue) remove(off int64) {
	i := sort.Search(len(q.offs), func(i int) bool { return q.offs[i].off >= off })
	if i == len(q.offs) || q.offs[i].off != off || q.offs[i].gone {
		return
	}
	q.offs[i].gone = true
	q.live--
	n := 0
	for n < len(q.offs) && q.offs[n].gone {
		n++
	}
	q.offs = q.offs[n:]
	if gone := len(q.offs) - q.live; gone > 16 && gone > q.live {
		kept := make([]queuedOffset, 0, 2*q.live)
		for _, o := range q.offs {
			if !o.gone {
				kept = append(kept, o)
			}
		}
		q.offs = kept
	}
}

// min returns the smallest offset in the queue, with ok false when it is
// empty. O(1).
func (q *offsetQueue) min() (int64, bool) {
	if len(q.offs) == 0 {
		return 0, false
	}
	return q.offs[0].off, true
}
