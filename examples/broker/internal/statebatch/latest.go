package statebatch

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Latest is what a partition of a compacted state topic adds up to when
// each record holds its key's whole value: the latest value of each key,
// a tombstone (a nil value) dropping it. Package txn's replay of
// __transaction_state and package sharestate's of __share_group_state are
// one each. The zero Latest is empty and ready.
type Latest[K comparable, V any] struct {
	vals    map[K]*V
	next    int64 // the offset after the last batch applied
	records int64 // records applied
}

// Apply applies raw, whole batches as a partition's Read returns them,
// concatenated, each record decoded by decode, and returns the offset
// after the last one. A record decode refuses fails it; a batch or record
// that does not read fails it with errRecord. O(records).
func (l *Latest[K, V]) Apply(raw []byte, decode func(kmsg.Record) (K, *V, error), errRecord error) (next int64, err error) {
	l.next, err = Walk(raw, l.next, func(_ *kmsg.RecordBatch, rec *kmsg.Record) error {
		k, v, err := decode(*rec)
		if err != nil {
			return err
		}
		l.Set(k, v)
		l.records++
		return nil
	})
	if errors.Is(err, ErrMalformed) {
		err = fmt.Errorf("%w: %v", errRecord, err)
	}
	return l.next, err
}

// Set makes v k's latest value; nil drops k (a tombstone).
func (l *Latest[K, V]) Set(k K, v *V) {
	if v == nil {
		delete(l.vals, k)
		return
	}
	if l.vals == nil {
		l.vals = make(map[K]*V)
	}
	l.vals[k] = v
}

// Values returns the latest value of each key. The map is the Latest's
// own: the caller reads it, and changes it only through Set.
func (l *Latest[K, V]) Values() map[K]*V { return l.vals }

// Records returns the number of records applied. O(1).
func (l *Latest[K, V]) Records() int64 { return l.records }

// Live returns the number of live records: one per key left. The others
// applied (overwritten values, tombstones) are dead. O(1).
func (l *Latest[K, V]) Live() int64 { return int64(len(l.vals)) }

// Len returns the number of keys with a value. O(1).
func (l *Latest[K, V]) Len() int { return len(l.vals) }
