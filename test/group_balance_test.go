package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// balancers are the assignors the group tests run with: kgo's default,
// cooperative-sticky (KIP-429's two-phase incremental rebalance), and the
// classic eager range assignor, where every rebalance revokes everything.
var balancers = []struct {
	name string // the protocol's name, usable in topic and group names
	opt  kgo.Opt
}{
	{"cooperative-sticky", kgo.Balancers(kgo.CooperativeStickyBalancer())},
	{"range", kgo.Balancers(kgo.RangeBalancer())},
}

// TestGroupSharesPartitions has three consumers of one group share a
// 12-partition topic, four partitions each, and consume 3,000 records
// spread over every partition: each record exactly once across the group,
// each by the member that owns its partition, and no rebalance once the
// group is stable.
func TestGroupSharesPartitions(t *testing.T) {
	const partitions, records = 12, 3000
	srv := startGroupBroker(t)
	for _, b := range balancers {
		t.Run(b.name, func(t *testing.T) {
			topic, group := "shares-"+b.name, "three-"+b.name
			admin := newClient(t, srv)
			createTopic(t, admin, topic, partitions)

			l := newLedger(0)
			var cs []*groupConsumer
			for i := range 3 {
				cs = append(cs, startGroupConsumer(t, srv, fmt.Sprintf("c%d", i), group, topic, l, b.opt))
			}
			took := waitBalanced(t, admin, group, partitions, cs...)
			t.Logf("%s: three members own four partitions each %v after starting", b.name, took.Round(time.Millisecond))
			waitGroupWaits(t, srv, 3)
			type calls struct{ assigned, revoked, lost int }
			before := make([]calls, len(cs))
			for i, c := range cs {
				before[i].assigned, before[i].revoked, before[i].lost = c.callbacks()
			}

			start := time.Now()
			want := newSpreadProducer(t, srv, topic, partitions).produce(records)
			eventually(t, func() bool { return l.distinct() >= records }, "every record is consumed")
			t.Logf("%s: %d records produced and consumed in %v, by member %v", b.name, records,
				time.Since(start).Round(time.Millisecond), l.counts())

			assert.Empty(t, l.missing(want), "records never consumed")
			assert.Empty(t, l.duplicates(), "records consumed twice")
			assert.Equal(t, records, l.processed(), "every record once")
			for i, c := range cs {
				var now calls
				now.assigned, now.revoked, now.lost = c.callbacks()
				assert.Equal(t, before[i], now, "%s: no rebalance once stable", c.name)
				owned := c.partitions()
				assert.Len(t, owned, partitions/3, "%s owns a third", c.name)
				for _, p := range l.memberPartitions(c.name) {
					assert.Contains(t, owned, p, "%s consumed only its own partitions", c.name)
				}
				c.checkCommits()
			}
		})
	}
}

// TestGroupHandsPartitionsOver has a group consume a topic that a
// producer keeps writing to while its membership changes: of three
// members one leaves (Close, which commits and sends LeaveGroup), and the
// two left share the partitions; then a fourth joins, and the three share
// them again. Each member commits what it processed when its partitions
// are revoked (see groupConsumer), so every record is consumed exactly
// once across both rebalances: none lost, none twice.
//
// Why exactly once holds with the classic protocol here: a member's last
// commit for a partition happens in OnPartitionsRevoked, before it rejoins
// (eager: every member revokes, commits and then rejoins; cooperative: the
// member that gives a partition up revokes and commits it, then rejoins,
// and the partition is assigned only in the rebalance that rejoin
// completes), and BlockRebalanceOnPoll keeps the revoke from running while
// polled records are being processed. The next owner fetches the
// committed offsets after its SyncGroup, which follows every member's
// rejoin. Duplicates would need a commit to fail or a member to be expelled
// while holding processed, uncommitted records; checkCommits asserts
// neither happened.
func TestGroupHandsPartitionsOver(t *testing.T) {
	const partitions = 12
	srv := startGroupBroker(t)
	for _, b := range balancers {
		t.Run(b.name, func(t *testing.T) {
			topic, group := "handover-"+b.name, "handover-"+b.name
			admin := newClient(t, srv)
			createTopic(t, admin, topic, partitions)

			l := newLedger(0)
			a := startGroupConsumer(t, srv, "a", group, topic, l, b.opt)
			bm := startGroupConsumer(t, srv, "b", group, topic, l, b.opt)
			c := startGroupConsumer(t, srv, "c", group, topic, l, b.opt)
			waitBalanced(t, admin, group, partitions, a, bm, c)

			// The producer writes throughout, so that every rebalance
			// moves partitions with records in flight and processed
			// records not yet committed by the autocommit.
			p := newSpreadProducer(t, srv, topic, partitions)
			stop := p.background()
			// progress waits for the group to process n more records
			// than it has.
			progress := func(n int) {
				t.Helper()
				target := l.distinct() + n
				eventually(t, func() bool { return l.distinct() >= target }, "the group keeps consuming")
			}
			progress(1000)

			start := time.Now()
			a.Close()
			closed := time.Since(start)
			took := waitBalanced(t, admin, group, partitions, bm, c)
			t.Logf("%s: after a left, b and c own six partitions each %v after the close returned (close took %v)",
				b.name, took.Round(time.Millisecond), closed.Round(time.Millisecond))
			progress(1000)

			d := startGroupConsumer(t, srv, "d", group, topic, l, b.opt)
			took = waitBalanced(t, admin, group, partitions, bm, c, d)
			t.Logf("%s: after d joined, three members own four partitions each %v after it started", b.name, took.Round(time.Millisecond))
			waitGroupWaits(t, srv, 3) // a's session ended when it left
			progress(1000)
			want := stop()
			eventually(t, func() bool { return l.distinct() >= len(want) }, "every record is consumed")

			dups := l.duplicates()
			t.Logf("%s: %d records, %d consumptions, %d duplicates; by member %v",
				b.name, len(want), l.processed(), len(dups), l.counts())
			assert.Empty(t, l.missing(want), "records never consumed")
			assert.Empty(t, dups, "records consumed twice")
			require.Equal(t, len(want), l.distinct())
			for _, m := range []*groupConsumer{a, bm, c, d} {
				m.checkCommits()
			}
			assert.Positive(t, l.counts()["a"], "a consumed before it left")
			assert.Positive(t, l.counts()["d"], "d consumed after it joined")
		})
	}
}
