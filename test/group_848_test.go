package test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// The KIP-848 ("consumer" protocol) group tests: franz-go's consumers with
// kgo.ServerSideBalancer, whose assignment the broker computes and hands
// over through heartbeats, partition by partition.

// start848Broker starts a broker whose consumer groups' members heartbeat
// every 100ms instead of Kafka's 5s: a member learns of a partition
// freed, or one to give up, within a tenth of a second.
func start848Broker(t *testing.T) *server.Server {
	t.Helper()
	return startGroupBroker(t, func(c *server.Config) { c.GroupConsumerHeartbeatInterval = 100 * time.Millisecond })
}

// describe848 returns the group as ConsumerGroupDescribe shows it.
func describe848(t *testing.T, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Groups, 1)
	return resp.Groups[0]
}

// waitBalanced848 waits until the consumer group is Stable with the
// members cs owning equal shares of the topic's partitions, none twice.
func waitBalanced848(t *testing.T, admin *kgo.Client, group string, partitions int, cs ...*groupConsumer) {
	t.Helper()
	eventually(t, func() bool {
		if !sharedEqually(partitions, cs...) {
			return false
		}
		d := describe848(t, admin, group)
		return d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == len(cs)
	}, fmt.Sprintf("%d consumer-protocol members share %d partitions", len(cs), partitions))
}

// TestConsumerGroup848 has three consumer-protocol members share a
// 12-partition topic and consume 3,000 records, each exactly once, then
// one leaves and the two left take its partitions over incrementally,
// with every handover committed; the group shows in ListGroups as a
// "consumer" group and not in DescribeGroups, as in Kafka 4.
func TestConsumerGroup848(t *testing.T) {
	const partitions, records = 12, 3000
	srv := start848Broker(t)
	topic, group := "orders-848", "g-848"
	admin := newClient(t, srv)
	createTopic(t, admin, topic, partitions)

	l := newLedger(0)
	var cs []*groupConsumer
	for i := range 3 {
		cs = append(cs, startGroupConsumer(t, srv, fmt.Sprintf("c%d", i), group, topic, l, kgo.ServerSideBalancer()))
	}
	waitBalanced848(t, admin, group, partitions, cs...)
	d := describe848(t, admin, group)
	assert.Equal(t, "uniform", d.AssignorName, "the default assignor")
	assert.Equal(t, d.Epoch, d.AssignmentEpoch, "the target is at the group epoch")
	for _, m := range d.Members {
		assert.Equal(t, d.AssignmentEpoch, m.MemberEpoch, "every member at the target's epoch")
		require.Len(t, m.Assignment.TopicPartitions, 1)
		assert.Equal(t, topic, m.Assignment.TopicPartitions[0].Topic, "assignments name their topics")
	}

	producer := newSpreadProducer(t, srv, topic, partitions)
	want := producer.produce(records)
	eventually(t, func() bool { return l.distinct() >= records }, "every record is consumed")
	assert.Empty(t, l.missing(want), "records never consumed")
	assert.Empty(t, l.duplicates(), "records consumed twice")

	lg := kmsg.NewPtrListGroupsRequest()
	listed, err := lg.RequestWith(context.Background(), admin)
	require.NoError(t, err)
	i := slices.IndexFunc(listed.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == group })
	require.GreaterOrEqual(t, i, 0, "the group is listed")
	assert.Equal(t, "consumer", listed.Groups[i].GroupType)
	assert.Equal(t, "consumer", listed.Groups[i].ProtocolType)
	assert.Equal(t, "Stable", listed.Groups[i].GroupState)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{group}
	described, err := dg.RequestWith(context.Background(), admin)
	require.NoError(t, err)
	assert.Equal(t, kerr.GroupIDNotFound.Code, described.Groups[0].ErrorCode, "DescribeGroups does not describe a consumer group")

	cs[2].Close()
	waitBalanced848(t, admin, group, partitions, cs[:2]...)
	more := producer.produce(records)
	eventually(t, func() bool { return l.distinct() >= 2*records }, "the two left consume the rest")
	assert.Empty(t, l.missing(append(want, more...)), "records never consumed")
	assert.Empty(t, l.duplicates(), "records consumed twice: a handover lost a commit")
	for _, c := range cs {
		c.checkCommits()
	}
	cs[0].Close()
	cs[1].Close()
	d = describe848(t, admin, group)
	assert.Equal(t, "Empty", d.State, "every member left")
	offsets := committedOffsets(t, admin, group, topic, partitions)
	total := int64(0)
	for _, o := range offsets {
		total += o
	}
	assert.Equal(t, int64(2*records), total, "every record's offset committed")
}

// TestConsumerGroup848Regex has the broker resolve a consumer's regular
// expression (KIP-848): topics that match, whole names only, are assigned,
// and a matching topic created later joins the assignment at the next
// group epoch.
func TestConsumerGroup848Regex(t *testing.T) {
	srv := start848Broker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, "rx-a", 2)
	createTopic(t, admin, "other-a", 2)
	cl := newClient(t, srv, kgo.ConsumerGroup("rx"), kgo.ConsumeRegex(), kgo.ConsumeTopics("rx-.*"),
		kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond))
	producer := newClient(t, srv)
	seen := map[string]bool{}
	poll := func(topic string) {
		require.NoError(t, producer.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr())
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for !seen[topic] && ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[r.Topic] = true })
		}
		require.True(t, seen[topic], "consumed from %s", topic)
	}
	poll("rx-a")
	createTopic(t, admin, "rx-b", 3)
	poll("rx-b")
	d := describe848(t, admin, "rx")
	require.Len(t, d.Members, 1)
	var names []string
	for _, tp := range d.Members[0].Assignment.TopicPartitions {
		names = append(names, tp.Topic)
	}
	slices.Sort(names)
	assert.Equal(t, []string{"rx-a", "rx-b"}, names, "the regex is resolved by the broker: other-a does not match")
	require.NotNil(t, d.Members[0].SubscribedTopicRegex)
}

// describe848At describes group at broker id with ConsumerGroupDescribe;
// ok is false on any error.
func (c *processCluster) describe848At(cl *kgo.Client, id int32, group string) (kmsg.ConsumerGroupDescribeResponseGroup, bool) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, false
	}
	return resp.Groups[0], true
}

// stable848With reports whether d is a Stable consumer group of n members
// (any number, if n is 0) whose assignments cover topic's partitions,
// each once.
func stable848With(d kmsg.ConsumerGroupDescribeResponseGroup, n int, topic string, partitions int32) bool {
	if d.State != "Stable" || n > 0 && len(d.Members) != n || len(d.Members) == 0 {
		return false
	}
	seen := map[int32]bool{}
	for _, m := range d.Members {
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				if tp.Topic != topic || seen[p] {
					return false
				}
				seen[p] = true
			}
		}
	}
	return len(seen) == int(partitions)
}

// TestConsumerGroup848CoordinatorKill9: three KIP-848 members of a group
// consume a 12-partition topic (replication factor 3) that an acks=all
// producer writes to, committing every 200ms, and the group's coordinator
// is killed with SIGKILL. The group is Stable again at the new leader of
// its offsets partition with every partition assigned, every commit
// acknowledged before the kill is there, and once the producer stops the
// members have consumed every offset at least once. (That the group comes
// back at the same epoch, from its records in __consumer_offsets, is
// TestConsumerGroup848SurvivesCoordinatorKill9's.)
func TestConsumerGroup848CoordinatorKill9(t *testing.T) {
	const (
		topic      = "group-848-failover"
		group      = "failover-848"
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
	c.eventually(func() bool {
		d, ok := c.describe848At(admin, coordinator, group)
		return ok && stable848With(d, 3, topic, partitions) && len(l.acknowledged()) == partitions
	}, 30*time.Second, 10*time.Millisecond, "the group is Stable, with commits on every partition")

	before := l.acknowledged()
	require.NoError(t, c.procs[coordinator].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	t.Logf("killed broker %d, the group's coordinator", coordinator)

	// The group re-forms at the new coordinator with its partitions
	// covered. Not asserted: that all three members are back. A kgo
	// member that got its assignment just before the kill can go on
	// sending its OffsetFetch to the dead coordinator (kgo keeps it
	// cached on dial errors there); its session then expires and the
	// others take its partitions, which still covers them all.
	survivor := coordinator%3 + 1
	var (
		next int32
		d    kmsg.ConsumerGroupDescribeResponseGroup
	)
	c.eventually(func() bool {
		next = c.findCoordinator(admin, survivor, group)
		if next <= 0 || next == coordinator {
			return false
		}
		var ok bool
		d, ok = c.describe848At(admin, next, group)
		return ok && stable848With(d, 0, topic, partitions)
	}, 30*time.Second, 10*time.Millisecond, "the group re-forms at a new coordinator")
	t.Logf("after the kill: the group Stable at broker %d after %v", next, time.Since(killed).Round(time.Millisecond))
	// The others join within their next heartbeats; a stuck one does
	// not (logged, not asserted).
	for deadline := time.Now().Add(memberSession); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got, ok := c.describe848At(admin, next, group); ok && stable848With(got, 3, topic, partitions) {
			d = got
			break
		}
	}
	t.Logf("%d of 3 members in the group %v after the kill", len(d.Members), time.Since(killed).Round(time.Millisecond))

	committed, ok := c.fetchCommitted(admin, next, group, topic, partitions)
	require.True(t, ok, "the new coordinator answers OffsetFetch")
	for p, o := range before {
		assert.GreaterOrEqual(t, committed[p], o, "partition %d: the commit acknowledged before the kill is kept", p)
	}

	load.stopAndFlush(t, prod)
	ends := make(map[int32]int64, partitions)
	alive := c.client(kgo.ConsumeTopics(topic))
	for p, end := range endOffsets(t, alive, topic, partitions) {
		ends[p] = end
	}
	c.eventually(func() bool { return l.upTo(ends) }, 60*time.Second, 20*time.Millisecond,
		"the members consume every partition to its end")
	missing, dups := l.gaps(ends)
	assert.Empty(t, missing, "no record was skipped")
	t.Logf("%d records consumed more than once (at least once across the failover)", dups)
}
