package storage

// Removing transaction markers (Kafka's CleanedTransactionMetadata).
//
// A marker (a control batch) ends its producer's transaction: a
// read_committed consumer, and a restart that rebuilds the producers'
// state and the aborted index from the batches, need it for as long as a
// batch of the transaction is in the log. A pass walks the section from
// the log's first segment in offset order, so the batches of a
// transaction are all met before its marker; the pass notes the producer
// of each transactional batch it meets (sc.txnSeen), kept or removed, and
// at the marker:
//
//   - if it met a batch of the transaction, the marker stays as it is: a
//     batch may still be there, or was removed by this very pass, which a
//     later pass sees;
//   - if it met none, the transaction has nothing left, and the marker is
//     handled as a tombstone (KIP-534): its delete horizon, now plus
//     delete.retention.ms, is written into it the first time, and a pass
//     after the horizon removes it, so that a consumer that read the
//     transaction's records has that long to read its marker too.
//
// A marker that ends its segment, in a log that keeps its segments'
// extents (logdir's), stays: an empty control batch would read as no
// marker at all. A control batch that is not a marker stays.

// cleanMarker returns what stays of d, a control batch, in a pass at
// nowMs whose delete horizon for what it first finds removable is
// horizon: d itself, d with its delete horizon set, or nil when it goes;
// and whether that is a change. keepWhole is set for a batch that must
// stay whatever (its segment's last, in a log that keeps extents).
func (sc *cleanScope) cleanMarker(d *decodedBatch, nowMs, horizon int64, keepWhole bool) (*Batch, bool, error) {
	whole := &Batch{raw: d.raw, info: d.info}
	if !d.info.marker() {
		return whole, false, nil
	}
	met := sc.txnSeen[d.info.ProducerID]
	delete(sc.txnSeen, d.info.ProducerID)
	own, has := d.horizon()
	switch {
	case met || keepWhole:
		return whole, false, nil
	case has && nowMs >= own:
		return nil, true, nil
	case has:
		return whole, false, nil
	}
	recs, err := decodeRecords(&d.kb)
	if err != nil {
		return nil, false, err
	}
	b, err := d.rewrite(recs, horizon)
	return b, err == nil, err
}
