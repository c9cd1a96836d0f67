package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStaticMemberRestartsWithoutRebalance restarts a static member
// (group.instance.id, KIP-345) of a two-member group: its client closes
// without leaving, and a new client with the same instance id joins well
// within the session timeout. The coordinator gives the instance its new
// member id and its old assignment without a rebalance: the other member
// sees no callback and stays in its generation, and no record is lost or
// read twice across the restart, since the closing client committed on its
// way out.
//
// It runs with each balancer, and with the static member following and
// leading: a static leader that rejoins a Stable group is told to skip the
// assignment (KIP-814, JoinGroup v9), with every member's metadata.
//
// One case rebalances by the client's choice, not the coordinator's: a
// cooperative-sticky leader. kgo, told to skip the assignment, balances
// anyway and compares its plan for itself with the assignment the
// coordinator kept; if they differ it takes its topic interests to have
// changed and rejoins (see kgo's InstanceID). They differ here: the other
// member's metadata, as Kafka keeps it, is that of its last JoinGroup,
// sent before it owned anything, so the sticky plan starts afresh. That
// rebalance is cooperative and moves nothing: the test asserts that the
// other member keeps its partitions and gives none up, and logs the
// rebalance.
func TestStaticMemberRestartsWithoutRebalance(t *testing.T) {
	const partitions, batch = 12, 1200
	for i, b := range balancers {
		for _, leads := range []bool{false, true} {
			name := b.name + ", static member follows"
			if leads {
				name = b.name + ", static member leads"
			}
			t.Run(name, func(t *testing.T) {
				// A broker of its own: the static members of the other
				// cases, which close without leaving, keep their sessions
				// until they expire.
				srv := startGroupBroker(t)
				admin := newClient(t, srv)
				topic := fmt.Sprintf("static-%d-%t", i, leads)
				group := topic
				createTopic(t, admin, topic, partitions)
				l := newLedger(0)
				static := []kgo.Opt{b.opt, kgo.InstanceID("instance-a"), kgo.SessionTimeout(10 * time.Second)}

				var a, other *groupConsumer
				if leads {
					a = startGroupConsumer(t, srv, "a", group, topic, l, static...)
					waitBalanced(t, admin, group, partitions, a)
					other = startGroupConsumer(t, srv, "other", group, topic, l, b.opt)
				} else {
					other = startGroupConsumer(t, srv, "other", group, topic, l, b.opt)
					waitBalanced(t, admin, group, partitions, other)
					a = startGroupConsumer(t, srv, "a", group, topic, l, static...)
				}
				waitBalanced(t, admin, group, partitions, a, other)
				p := newSpreadProducer(t, srv, topic, partitions)
				want := p.produce(batch)
				eventually(t, func() bool { return l.distinct() >= batch }, "the group consumes the first batch")

				owned := a.partitions()
				memberBefore, genBefore := other.cl.GroupMetadata()
				var before [3]int
				before[0], before[1], before[2] = other.callbacks()
				oldID, _ := a.cl.GroupMetadata()
				otherOwned, otherGiven := other.partitions(), other.partitionsRevoked()

				start := time.Now()
				a.Close()
				again := startGroupConsumer(t, srv, "a again", group, topic, l, static...)
				eventually(t, func() bool { return len(again.partitions()) == len(owned) }, "the restarted instance is assigned")
				t.Logf("%s: restarted instance owns %v again %v after its close began", name, again.partitions(), time.Since(start).Round(time.Millisecond))
				assert.Equal(t, owned, again.partitions(), "the same partitions")
				newID, genAgain := again.cl.GroupMetadata()
				assert.NotEqual(t, oldID, newID, "a new member id for the instance")
				clientRebalances := leads && b.name == "cooperative-sticky"
				if !clientRebalances {
					assert.Equal(t, genBefore, genAgain, "the restarted instance joins the current generation")
				}

				want = append(want, p.produce(batch)...)
				eventually(t, func() bool { return l.distinct() >= len(want) }, "the group consumes the second batch")
				assert.Empty(t, l.missing(want), "records never consumed")
				assert.Empty(t, l.duplicates(), "records consumed twice")
				require.Equal(t, len(want), l.processed())

				// Stable: the group has no rebalance to finish, except the
				// one a cooperative-sticky leader starts by itself, which
				// lets consumption go on while it runs: wait for it to end
				// (with the other member in a new generation).
				var d kmsg.DescribeGroupsResponseGroup
				eventually(t, func() bool {
					d = describeGroup(t, admin, group)
					return d.State == "Stable" || !clientRebalances
				}, "the client's own rebalance ends")
				assert.Equal(t, "Stable", d.State)
				assert.Len(t, d.Members, 2)
				var after [3]int
				after[0], after[1], after[2] = other.callbacks()
				memberAfter, genAfter := other.cl.GroupMetadata()
				assert.Equal(t, memberBefore, memberAfter)
				assert.Equal(t, otherOwned, other.partitions(), "the other member keeps its partitions")
				assert.Equal(t, otherGiven, other.partitionsRevoked(), "the other member gives none up")
				if clientRebalances {
					t.Logf("%s: kgo rebalanced after the restart (the other member's callbacks %v, then %v; generation %d, then %d)",
						name, before, after, genBefore, genAfter)
				} else {
					assert.Equal(t, before, after, "the other member's callbacks: no rebalance")
					assert.Equal(t, genBefore, genAfter, "the other member's generation")
				}
				waitGroupWaits(t, srv, 2) // the old member id's session ended with its replacement
				for _, c := range []*groupConsumer{a, again, other} {
					c.checkCommits()
				}
			})
		}
	}
}
