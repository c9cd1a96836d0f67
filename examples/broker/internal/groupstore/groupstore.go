package groupstore

import (
	"cmp"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A Store keeps what a coordinator must find again when it moves or
// restarts: each change of its groups, as the records of G and M in the
// group's partition of __consumer_offsets (the broker's stores are
// package group/service's, in the format of package group/records).
//
// The coordinator calls it with the group's lock held, in the order the
// changes happen, so Append must be quick and must not call back into
// the coordinator: it appends the change (to the leader's log) and
// returns. A heartbeat's change is durable only once its Pending says so:
// the heartbeat is answered then, as Kafka's runtime answers a write once
// the high watermark passes it. Changes nobody waits for (a session
// expired, a group deleted) are appended all the same, their wait
// dropped. Different groups' changes may come concurrently: a store
// guards itself.
type Store[G, M any] interface {
	// Append appends ch as one batch and returns the wait for it to be
	// durable. An error means nothing was appended (this broker no longer
	// leads the group's partition, say): the client is answered as Error
	// maps it.
	Append(ch Change[G, M]) (Pending, error)
}

// Pending is a change appended but not yet durable: called once, with no
// lock held, it arranges for done to be called exactly once, with nil when
// the change is durable (the partition's high watermark passed it), or
// with the error the client gets (a *kerr.Error; any other error is
// NOT_COORDINATOR). done may be called before Pending returns, from any
// goroutine.
type Pending func(done func(error))

// Change is what one step of a group changed, appended as one batch: its
// metadata G, the members M changed or added, the members removed, or the
// group gone.
type Change[G, M any] struct {
	Group   string
	Meta    *G       // the group's metadata, without members; nil: unchanged
	Members []M      // members whose record changed, in id order
	Removed []string // members gone (tombstones), in id order
	Deleted bool     // the group is gone: its tombstone follows Removed's
}

// Empty reports whether c changes nothing.
func (c *Change[G, M]) Empty() bool {
	return c.Meta == nil && len(c.Members) == 0 && len(c.Removed) == 0 && !c.Deleted
}

// AppendChanged appends ch to s unless it changes nothing (nil then), and
// once appended hands its metadata, if any, to keptMeta and each member
// record of it, by index, to keptMember, so that the coordinator notes
// what it last stored: its next change compares with that and writes only
// what differs. What a refused append left unstored is thus tried again
// with the group's next change. O(members in ch).
func AppendChanged[G, M any](s Store[G, M], ch Change[G, M], keptMeta func(*G), keptMember func(i int, m *M)) (Pending, error) {
	if ch.Empty() {
		return nil, nil
	}
	p, err := s.Append(ch)
	if err != nil {
		return nil, err
	}
	if ch.Meta != nil {
		keptMeta(ch.Meta)
	}
	for i := range ch.Members {
		keptMember(i, &ch.Members[i])
	}
	return p, nil
}

// Error is the answer to a heartbeat whose change the store refused
// with err, or did not make durable, as Kafka's GroupCoordinatorService
// maps a write's errors (handleOperationException): the partition
// missing, too few replicas or a write that timed out are
// COORDINATOR_NOT_AVAILABLE, which a member retries; a record too large
// is UNKNOWN_SERVER_ERROR; NOT_COORDINATOR for anything that wraps no
// Kafka error. Answered as they are, a timeout (REQUEST_TIMED_OUT) would
// end a kgo member's join for good.
func Error(err error) *kerr.Error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.NotCoordinator
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.UnknownServerError
	}
	return ke
}

// Topic is a subscribed topic as a group's metadata hash sees it.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// TopicsHash hashes a group's subscribed topics that exist, each its
// name, id and partition count, in name order (ts is sorted here), as
// Kafka 4's metadata hash stands for them in a group's record: a
// coordinator that loads the group compares it with the topics then, and
// bumps the group epoch only if they changed meanwhile. O(topics).
func TopicsHash(ts []Topic) uint64 {
	slices.SortFunc(ts, func(a, b Topic) int { return cmp.Compare(a.Name, b.Name) })
	h := fnv.New64a()
	for _, t := range ts {
		h.Write([]byte(t.Name))
		h.Write(t.ID[:])
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(t.Partitions)))
	}
	return h.Sum64()
}
