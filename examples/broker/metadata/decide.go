package metadata

import (
	"fmt"
	"slices"
	"strings"
)

// ConfigUncleanLeaderElection is the topic config that lets a partition
// whose ISR has no live replica be led by a live replica outside it (an
// unclean election), at the cost of the records it lacks. Kafka's name;
// false by default.
const ConfigUncleanLeaderElection = "unclean.leader.election.enable"

// UncleanElection reports whether t's partitions may be led uncleanly: its
// own unclean.leader.election.enable, or def, the cluster's default, when
// it has none ("true" or "false", any case, as Kafka parses a boolean).
func UncleanElection(t *Topic, def bool) bool {
	if v, ok := t.Configs[ConfigUncleanLeaderElection]; ok {
		switch {
		case strings.EqualFold(v, "true"):
			return true
		case strings.EqualFold(v, "false"):
			return false
		}
	}
	return def
}

// Fence returns the record that fences broker id, whose session expired:
// it leaves every ISR it is in (but the last member of one, which stays
// so that it alone may lead again), and each partition it led gets the
// first unfenced replica of its remaining ISR as leader, with the leader
// epoch bumped, or goes offline (NoLeader) when none is left, unless its
// topic allows unclean election (UncleanElection, with uncleanDefault the
// cluster's default): then the first unfenced replica outside the ISR
// leads, alone in the ISR. Fencing a fenced broker changes nothing.
// O(partitions).
func Fence(im *Image, id int32, uncleanDefault bool) Record {
	b, ok := im.brokers[id]
	if ok && b.Fenced {
		return Record{}
	}
	b.ID, b.Fenced = id, true
	rec := Record{Brokers: []Broker{b}}
	fenced := func(x int32) bool { return x == id || im.Fenced(x) }
	rec.Partitions = changes(im, func(t *Topic, p Partition) (Partition, bool) {
		next, changed := leave(p, id, fenced)
		if next.Leader == NoLeader && UncleanElection(t, uncleanDefault) {
			next, changed = electUnclean(p, next, fenced, changed)
		}
		return next, changed
	})
	return rec
}

// Register returns the record that registers broker id at epoch, unfenced:
// a heartbeat from a broker whose registration is current changes nothing
// (the record is empty). A new epoch is a restarted broker, which may have
// lost what it held: it leaves every ISR as a fenced broker does, then
// leads again the offline partitions whose ISR it is the last member of,
// and, where the topic allows unclean election (UncleanElection, with
// uncleanDefault the cluster's default), the offline partitions it is a
// replica of, alone in their ISR. A broker fenced at the same epoch (a
// pause longer than its session) is unfenced the same way. A broker's
// first registration leaves nothing: a broker that never registered is
// not fenced, so Place gave it what it holds in this very incarnation (a
// topic created while it was starting), and taking it away would only
// move leaderships at every cluster's start. O(partitions).
func Register(im *Image, id int32, epoch int64, uncleanDefault bool) Record {
	b, known := im.brokers[id]
	if known && !b.Fenced && b.Epoch == epoch {
		return Record{}
	}
	rec := Record{Brokers: []Broker{{ID: id, Epoch: epoch}}}
	if !known {
		return rec
	}
	fenced := func(x int32) bool { return x == id || im.Fenced(x) }
	rec.Partitions = changes(im, func(t *Topic, p Partition) (Partition, bool) {
		next, changed := leave(p, id, fenced)
		switch {
		case next.Leader != NoLeader:
		case next.InISR(id):
			next.Leader = id
			next.LeaderEpoch++
			if !changed {
				next.PartitionEpoch++
			}
			changed = true
		case UncleanElection(t, uncleanDefault):
			// id is live: only it may be elected, the others as
			// Fence found them.
			next, changed = electUnclean(p, next, func(x int32) bool { return x != id }, changed)
		}
		return next, changed
	})
	return rec
}

// electUnclean gives offline partition p (was, before this record) the
// first of its replicas that fenced does not exclude as
// leader, alone in its ISR (Kafka's unclean election: the records the ISR
// held and it lacks are lost, and followers truncate to it by leader
// epoch). The leader and partition epochs move once from was's. With no
// such replica p stays as it is, and so does changed, which says whether
// p already differs from was.
func electUnclean(was, p Partition, fenced func(int32) bool, changed bool) (Partition, bool) {
	for _, r := range p.Replicas {
		if fenced(r) {
			continue
		}
		p.Leader = r
		p.ISR = []int32{r}
		p.LeaderEpoch = was.LeaderEpoch + 1
		p.PartitionEpoch = was.PartitionEpoch + 1
		return p, true
	}
	return p, changed
}

// changes applies f to every partition of im and returns those it changed.
func changes(im *Image, f func(*Topic, Partition) (Partition, bool)) []PartitionChange {
	var out []PartitionChange
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			if next, changed := f(t, p.clone()); changed {
				out = append(out, PartitionChange{Topic: t.ID, Index: int32(i), Partition: next})
			}
		}
	}
	return out
}

// leave takes broker id out of p: out of its ISR unless it is the last
// member, and out of its leadership, which goes to the first replica of
// the ISR left that is not fenced (clean election), or to nobody.
func leave(p Partition, id int32, fenced func(int32) bool) (Partition, bool) {
	if !p.InISR(id) && p.Leader != id {
		return p, false
	}
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(x int32) bool { return x == id })
	if len(isr) == 0 {
		// The last member: it stays, and nobody else may lead.
		if p.Leader == NoLeader {
			return p, false
		}
		p.Leader = NoLeader
		p.LeaderEpoch++
		p.PartitionEpoch++
		return p, true
	}
	p.ISR = isr
	p.PartitionEpoch++
	if p.Leader == id || p.Leader == NoLeader {
		p.Leader = NoLeader
		for _, r := range p.ISR {
			if !fenced(r) {
				p.Leader = r
				break
			}
		}
		p.LeaderEpoch++
	}
	return p, true
}

// AlterISR returns the record that sets the ISR of partition index of topic
// to isr, as its leader asks (Kafka's AlterPartition). The leader must be
// the partition's, at its current leader epoch, and the change made
// against the current partition epoch; isr must hold the leader, only
// replicas, each once, and no fenced broker it adds. An ISR equal to the
// current one is accepted with an empty record. An ISR that holds every
// target replica of a reassignment in flight completes it.
func AlterISR(im *Image, topic TopicID, index, leader, leaderEpoch, partitionEpoch int32, isr []int32) (Record, error) {
	p, err := im.Partition(topic, index)
	if err != nil {
		return Record{}, err
	}
	switch {
	case leaderEpoch != p.LeaderEpoch:
		return Record{}, fmt.Errorf("%w: %d, the partition's is %d", ErrFencedLeaderEpoch, leaderEpoch, p.LeaderEpoch)
	case leader != p.Leader:
		return Record{}, fmt.Errorf("%w: broker %d, the leader is %d", ErrNotLeader, leader, p.Leader)
	case partitionEpoch != p.PartitionEpoch:
		return Record{}, fmt.Errorf("%w: %d, the partition's is %d", ErrStalePartitionEpoch, partitionEpoch, p.PartitionEpoch)
	case !slices.Contains(isr, leader):
		return Record{}, fmt.Errorf("%w: %v lacks the leader %d", ErrInvalidISR, isr, leader)
	}
	ordered := make([]int32, 0, len(isr))
	for _, r := range p.Replicas {
		if slices.Contains(isr, r) {
			ordered = append(ordered, r)
		}
	}
	if len(ordered) != len(isr) {
		return Record{}, fmt.Errorf("%w: %v is not a set of the replicas %v", ErrInvalidISR, isr, p.Replicas)
	}
	for _, r := range ordered {
		if !p.InISR(r) && im.Fenced(r) {
			return Record{}, fmt.Errorf("%w: broker %d is fenced", ErrInvalidISR, r)
		}
	}
	if slices.Equal(ordered, p.ISR) {
		return Record{}, nil
	}
	next := p.clone()
	next.ISR = ordered
	// The ISR that takes in the last replica a reassignment adds
	// completes it in the same record (reassign.go), as Kafka's
	// PartitionChangeBuilder does.
	next = completeReassignment(im, p, next)
	next.PartitionEpoch = p.PartitionEpoch + 1
	return Record{Partitions: []PartitionChange{{Topic: topic, Index: index, Partition: next}}}, nil
}

// Place returns a new topic with partitions partitions of rf replicas on
// brokers (the cluster's ids, ascending): partition p's replicas are the
// brokers from index p mod n on, wrapping around, so that leadership
// spreads evenly. Each is led by its first unfenced replica, with its
// unfenced replicas in sync (a new partition has nothing any of them
// could miss); a partition whose replicas are all fenced is offline until
// its first replica registers.
func Place(im *Image, brokers []int32, name string, id TopicID, partitions int32, rf int16, configs map[string]string) (*Topic, error) {
	n := len(brokers)
	if rf < 1 || int(rf) > n {
		return nil, fmt.Errorf("%w: replication factor %d on %d broker(s)", ErrNoBrokers, rf, n)
	}
	t := &Topic{Name: name, ID: id, ReplicationFactor: rf, Configs: configs, Partitions: make([]Partition, partitions)}
	for p := range t.Partitions {
		t.Partitions[p] = placePartition(im, brokers, p, rf)
	}
	return t, nil
}

// placePartition returns partition p of rf replicas on brokers, as Place
// places it: the brokers from index p mod n on, led by the first unfenced
// one, the unfenced ones in sync (the first replica alone, offline, when
// all are fenced).
func placePartition(im *Image, brokers []int32, p int, rf int16) Partition {
	replicas := make([]int32, rf)
	for i := range replicas {
		replicas[i] = brokers[(p+i)%len(brokers)]
	}
	part := Partition{Replicas: replicas, Leader: NoLeader}
	for _, r := range replicas {
		if !im.Fenced(r) {
			part.ISR = append(part.ISR, r)
		}
	}
	if len(part.ISR) == 0 {
		part.ISR = replicas[:1]
	} else {
		part.Leader = part.ISR[0]
	}
	return part
}
