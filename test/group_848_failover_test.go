package test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// describe848Kadm returns the group as kadm's DescribeConsumerGroups
// shows it (ConsumerGroupDescribe at the coordinator kadm finds); false
// while it cannot. Each call is a new client's, seeded with the brokers
// but dead's (0: none): kgo's sharded requests keep a coordinator that
// refuses connections cached (a refused dial is not retried, and does not
// drop it), so a long-lived client would go on asking the dead one, and
// a seed that refuses fails the request.
func (c *processCluster) describe848Kadm(group string, dead int32) (kadm.DescribedConsumerGroup, error) {
	var seeds []string
	for id := int32(1); id <= 3; id++ {
		if id != dead {
			seeds = append(seeds, c.addrs[id])
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return kadm.DescribedConsumerGroup{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ds, err := kadm.NewClient(cl).DescribeConsumerGroups(ctx, group)
	if err != nil {
		return kadm.DescribedConsumerGroup{}, err
	}
	d, ok := ds[group]
	if !ok {
		return d, fmt.Errorf("group %s not described", group)
	}
	return d, d.Err
}

// members848 returns each member's epoch and assignment, by member id.
func members848(d kadm.DescribedConsumerGroup) map[string]string {
	out := make(map[string]string, len(d.Members))
	for _, m := range d.Members {
		out[m.MemberID] = fmt.Sprintf("epoch %d: %v", m.MemberEpoch, m.Assignment.Sorted())
	}
	return out
}

// TestConsumerGroup848SurvivesCoordinatorKill9: three KIP-848 members of a
// group consume a 12-partition topic (replication factor 3) that an
// acks=all producer writes to, committing every 200ms, and the group's
// coordinator is killed with SIGKILL. The group's records in
// __consumer_offsets bring it back at the new leader of its offsets
// partition as it was: the same group epoch, the same members at the same
// epochs with the same partitions, Stable, read through kadm before and
// after. No member rejoins and nothing is revoked: nothing is consumed
// twice beyond what was consumed and not yet committed at the kill, and
// once the producer stops every offset has been consumed.
func TestConsumerGroup848SurvivesCoordinatorKill9(t *testing.T) {
	const (
		topic      = "group-848-survives"
		group      = "survives-848"
		partitions = 12
	)
	c := startProcessCluster(t, append([]string{"--group.consumer.heartbeat.interval.ms", "250",
		"--group.consumer.session.timeout.ms", "10000"}, groupFailoverArgs...)...)
	admin, prod, load, _ := c.startLoad(topic, partitions)

	var coordinator int32
	c.eventually(func() bool { coordinator = c.findCoordinator(admin, 1, group); return coordinator > 0 },
		30*time.Second, 10*time.Millisecond, "the group has a coordinator")
	l := newConsumedLog()
	for i := range 3 {
		c.startMember(t, fmt.Sprintf("member-%d", i), group, topic, l, kgo.ServerSideBalancer())
	}
	var before kadm.DescribedConsumerGroup
	c.eventually(func() bool {
		d, ok := c.describe848At(admin, coordinator, group)
		return ok && stable848With(d, 3, topic, partitions)
	}, 30*time.Second, 10*time.Millisecond, "the group is Stable")
	// Every member has fetched its partitions' offsets and commits
	// them: each partition's commit moved on since the group was
	// Stable (the first member committed them all before the others
	// joined, and a member that has just been given a partition fetches
	// its offset from the coordinator).
	stableAt := l.acknowledged()
	c.eventually(func() bool {
		acked := l.acknowledged()
		for p := range int32(partitions) {
			if a, ok := acked[p]; !ok || a <= stableAt[p] {
				return false
			}
		}
		var err error
		before, err = c.describe848Kadm(group, 0)
		return err == nil && before.State == "Stable" && len(before.Members) == 3 && before.Coordinator.NodeID == coordinator
	}, 30*time.Second, 10*time.Millisecond, "every partition's commit moved on since the group was Stable")

	// What may be consumed again: what was consumed and not committed
	// at the kill (a commit in flight may still land, which only lowers
	// it).
	acked, consumed := l.acknowledged(), l.consumedEnds()
	uncommitted := 0
	for p, end := range consumed {
		uncommitted += int(end - acked[p])
	}
	require.NoError(t, c.procs[coordinator].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	t.Logf("killed broker %d, the group's coordinator, at group epoch %d; %d records consumed and not committed",
		coordinator, before.Epoch, uncommitted)

	var after kadm.DescribedConsumerGroup
	var err error
	if !assert.Eventually(t, func() bool {
		after, err = c.describe848Kadm(group, coordinator)
		return err == nil && after.Coordinator.NodeID != coordinator && after.State == "Stable" && len(after.Members) == 3
	}, 30*time.Second, 100*time.Millisecond, "the group is Stable at a new coordinator") {
		t.Fatalf("before the kill: %+v\nafter: %+v (%v)", before, after, err)
	}
	t.Logf("after the kill: the group Stable at broker %d after %v, at group epoch %d",
		after.Coordinator.NodeID, time.Since(killed).Round(time.Millisecond), after.Epoch)
	assert.Equal(t, before.Epoch, after.Epoch, "the same group epoch: no rebalance")
	assert.Equal(t, before.AssignmentEpoch, after.AssignmentEpoch, "the same target assignment")
	assert.Equal(t, members848(before), members848(after), "the same members, at their epochs, with their partitions")

	var committed map[int32]int64
	c.eventually(func() bool {
		var ok bool
		committed, ok = c.fetchCommitted(admin, after.Coordinator.NodeID, group, topic, partitions)
		return ok
	}, 10*time.Second, 50*time.Millisecond, "the new coordinator answers OffsetFetch")
	for p, o := range acked {
		assert.GreaterOrEqual(t, committed[p], o, "partition %d: the commit acknowledged before the kill is kept", p)
	}

	load.stopAndFlush(t, prod)
	alive := c.client(kgo.ConsumeTopics(topic))
	ends := endOffsets(t, alive, topic, partitions)
	c.eventually(func() bool { return l.upTo(ends) }, 60*time.Second, 20*time.Millisecond,
		"the members consume every partition to its end")
	missing, dups := l.gaps(ends)
	assert.Empty(t, missing, "no record was skipped")
	assert.LessOrEqual(t, dups, uncommitted, "nothing consumed twice beyond what was uncommitted at the kill")
	t.Logf("%d records consumed more than once", dups)
	final, err := c.describe848Kadm(group, coordinator)
	require.NoError(t, err)
	assert.Equal(t, before.Epoch, final.Epoch, "still no rebalance once the load is consumed")
}

// consumedEnds returns, by partition, the offset after the highest one
// consumed.
func (l *consumedLog) consumedEnds() map[int32]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int32]int64, len(l.offsets))
	for p, offs := range l.offsets {
		for o := range offs {
			out[p] = max(out[p], o+1)
		}
	}
	return out
}
