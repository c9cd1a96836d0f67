package server

// A share group's share.isolation.level (Kafka's GroupConfig, KIP-932):
// read_uncommitted by default, a share fetch acquires records up to the
// high watermark, whatever transactions they belong to. Read_committed,
// as Kafka's SharePartition reads under FetchIsolation.TXN_COMMITTED,
// acquires nothing at or past the last stable offset (the first offset of
// a transaction still undecided), and archives the records of the
// aborted transactions it acquired instead of handing them out
// (archiveAborted), so that no member of the group is ever delivered
// one, and their offsets count as done with. The transaction markers are
// acquired as other records are: the client acknowledges them as gaps.

import (
	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// readLimit returns the isolation a share fetch of part reads with and the
// offset it acquires before: the high watermark, or, reading committed,
// the last stable offset.
func (f *delayedShareFetch) readLimit(offs storage.Offsets) (storage.Isolation, int64) {
	if f.readCommitted {
		return storage.ReadCommitted, offs.LastStable
	}
	return storage.ReadUncommitted, offs.HighWatermark
}

// archiveAborted archives, in sp, the offsets of ranges that records (the
// batches read for them) holds in transactional batches of the aborted
// transactions aborted, which member acquired, and returns ranges
// without them, and whether it archived any. A batch belongs to an aborted transaction of
// its producer when it lies between that transaction's first offset and
// its abort marker, as a consumer reading committed finds it. O(batches
// × aborted + ranges).
func archiveAborted(sp *share.Partition, member string, ranges []share.Range, records []byte,
	aborted []storage.AbortedTxn) (_ []share.Range, archived bool) {
	if len(aborted) == 0 {
		return ranges, false
	}
	for pos := 0; pos+storage.BatchHeaderSize <= len(records); {
		b, err := storage.ReadBatchHeader(records[pos : pos+storage.BatchHeaderSize])
		if err != nil {
			break // the log's own batches: it cannot be
		}
		pos += b.Size
		if !b.Transactional || b.Control != storage.ControlNone || !inAborted(b, aborted) {
			continue
		}
		var cut []share.Range
		ranges, cut = cutRanges(ranges, b.BaseOffset, b.LastOffset)
		for _, rg := range cut {
			// Held by member, acquired just now: archived as a gap is.
			archived = sp.Acknowledge(member, rg.First, rg.Last, []int8{int8(share.AckGap)}, 0) == nil || archived
		}
	}
	return ranges, archived
}

// inAborted reports whether b, a transactional data batch, is of one of
// aborted.
func inAborted(b storage.BatchInfo, aborted []storage.AbortedTxn) bool {
	for _, a := range aborted {
		if a.ProducerID == b.ProducerID && a.FirstOffset <= b.BaseOffset && b.LastOffset < a.LastOffset {
			return true
		}
	}
	return false
}

// cutRanges returns what is left of ranges without the offsets first to
// last, and the parts removed (nil when none); ranges is left as it is.
func cutRanges(ranges []share.Range, first, last int64) (kept, cut []share.Range) {
	kept = make([]share.Range, 0, len(ranges)+1) // a range cut in the middle leaves two
	for _, rg := range ranges {
		if rg.Last < first || rg.First > last {
			kept = append(kept, rg)
			continue
		}
		if rg.First < first {
			kept = append(kept, share.Range{First: rg.First, Last: first - 1, DeliveryCount: rg.DeliveryCount})
		}
		cut = append(cut, share.Range{First: max(rg.First, first), Last: min(rg.Last, last), DeliveryCount: rg.DeliveryCount})
		if rg.Last > last {
			kept = append(kept, share.Range{First: last + 1, Last: rg.Last, DeliveryCount: rg.DeliveryCount})
		}
	}
	return kept, cut
}
