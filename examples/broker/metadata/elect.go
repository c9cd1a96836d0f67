package metadata

import (
	"errors"
	"fmt"
)

// ElectionType is what ElectLeaders asks for, with Kafka's values.
type ElectionType int8

const (
	// ElectPreferred makes each partition's preferred replica (its first)
	// its leader, where that replica is live and in sync.
	ElectPreferred ElectionType = 0
	// ElectUnclean gives an offline partition a leader: a live replica
	// of its ISR if one is left, else any live replica, alone in the ISR
	// (the records the ISR held and it lacks are lost).
	ElectUnclean ElectionType = 1
)

var (
	// ErrElectionNotNeeded: the partition already has the leader asked
	// for (Kafka's ELECTION_NOT_NEEDED).
	ErrElectionNotNeeded = errors.New("metadata: election not needed")
	// ErrPreferredLeaderNotAvailable: the preferred replica is fenced or
	// out of the ISR (PREFERRED_LEADER_NOT_AVAILABLE).
	ErrPreferredLeaderNotAvailable = errors.New("metadata: preferred leader not available")
	// ErrEligibleLeadersNotAvailable: no replica of an offline partition
	// is live (ELIGIBLE_LEADERS_NOT_AVAILABLE).
	ErrEligibleLeadersNotAvailable = errors.New("metadata: eligible leaders not available")
)

// PartitionRef names a partition of a topic, by the topic's id.
type PartitionRef struct {
	Topic TopicID
	Index int32
}

// Elect returns the record that elects leaders for parts by typ, and each
// part's result: nil for an election the record makes, else
// ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable,
// ErrEligibleLeadersNotAvailable, ErrUnknownTopic or ErrUnknownPartition.
// Each election bumps the partition's leader and partition epochs once, as
// a fencing's does; a partition listed twice is elected once, and its
// second listing gets the first's result. O(len(parts)).
func Elect(im *Image, typ ElectionType, parts []PartitionRef) (Record, []error) {
	var rec Record
	results := make([]error, len(parts))
	done := make(map[PartitionRef]int, len(parts))
	for i, ref := range parts {
		if j, ok := done[ref]; ok {
			results[i] = results[j]
			continue
		}
		done[ref] = i
		p, err := im.Partition(ref.Topic, ref.Index)
		if err != nil {
			results[i] = err
			continue
		}
		var next Partition
		switch typ {
		case ElectPreferred:
			next, err = electPreferred(im, p)
		case ElectUnclean:
			next, err = electOffline(im, p)
		default:
			err = fmt.Errorf("metadata: election type %d is not Kafka's preferred (0) or unclean (1)", typ)
		}
		if results[i] = err; err == nil {
			rec.Partitions = append(rec.Partitions, PartitionChange{Topic: ref.Topic, Index: ref.Index, Partition: next})
		}
	}
	return rec, results
}

// electPreferred makes p's preferred replica its leader.
func electPreferred(im *Image, p Partition) (Partition, error) {
	pref := p.Replicas[0]
	switch {
	case p.Leader == pref:
		return p, fmt.Errorf("%w: broker %d leads already", ErrElectionNotNeeded, pref)
	case im.Fenced(pref) || !p.InISR(pref):
		return p, fmt.Errorf("%w: broker %d is fenced or out of the ISR %v", ErrPreferredLeaderNotAvailable, pref, p.ISR)
	}
	p = p.clone()
	p.Leader = pref
	p.LeaderEpoch++
	p.PartitionEpoch++
	return p, nil
}

// electOffline gives offline partition p a leader: cleanly from its ISR
// if a member is live (a broker fenced while it was the last one stays in
// the ISR, see leave), else uncleanly.
func electOffline(im *Image, p Partition) (Partition, error) {
	if !p.Offline() {
		return p, fmt.Errorf("%w: broker %d leads", ErrElectionNotNeeded, p.Leader)
	}
	for _, r := range p.ISR {
		if !im.Fenced(r) {
			next := p.clone()
			next.Leader = r
			next.LeaderEpoch++
			next.PartitionEpoch++
			return next, nil
		}
	}
	next, changed := electUnclean(p, p.clone(), im.Fenced, false)
	if !changed {
		return p, fmt.Errorf("%w: every replica of %v is fenced", ErrEligibleLeadersNotAvailable, p.Replicas)
	}
	return next, nil
}

// Imbalanced returns the partitions whose preferred replica could lead
// and does not, of the brokers whose imbalance is above pct percent:
// Kafka's auto leader rebalance, where a broker's imbalance is the share
// of the partitions it is the preferred replica of that it does not lead.
// Only partitions whose preferred replica is unfenced and in the ISR are
// returned: a preferred election of any other would fail. O(partitions).
func Imbalanced(im *Image, pct int) []PartitionRef {
	type tally struct{ preferred, notLed int }
	brokers := make(map[int32]*tally)
	var movable []PartitionRef
	for _, t := range im.Topics() {
		for i, p := range t.Partitions {
			pref := p.Replicas[0]
			b := brokers[pref]
			if b == nil {
				b = &tally{}
				brokers[pref] = b
			}
			b.preferred++
			if p.Leader != pref {
				b.notLed++
				if !im.Fenced(pref) && p.InISR(pref) {
					movable = append(movable, PartitionRef{Topic: t.ID, Index: int32(i)})
				}
			}
		}
	}
	out := movable[:0]
	for _, ref := range movable {
		t, _ := im.TopicByID(ref.Topic)
		b := brokers[t.Partitions[ref.Index].Replicas[0]]
		if b.notLed*100 > pct*b.preferred {
			out = append(out, ref)
		}
	}
	return out
}
