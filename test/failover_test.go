package test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// processCluster is three broker binaries, each a child process with a
// log dir, a Kafka port and a metadata quorum port of its own.
type processCluster struct {
	t     testing.TB
	addrs map[int32]string
	procs map[int32]*brokerProcess
	argv  map[int32][]string // each broker's arguments, its log dir's included, to restart it
}

// startProcessCluster starts brokers 1 to 3 with args added to each.
func startProcessCluster(t testing.TB, args ...string) *processCluster {
	t.Helper()
	c := &processCluster{t: t, addrs: map[int32]string{}, procs: map[int32]*brokerProcess{},
		argv: map[int32][]string{}}
	var spec, voters []string
	for id := int32(1); id <= 3; id++ {
		c.addrs[id] = freePort(t)
		spec = append(spec, fmt.Sprintf("%d@%s", id, c.addrs[id]))
		voters = append(voters, fmt.Sprintf("%d@%s", id, freePort(t)))
	}
	for id := int32(1); id <= 3; id++ {
		argv := append([]string{"--node.id", strconv.Itoa(int(id)), "--listeners", c.addrs[id],
			"--cluster", strings.Join(spec, ","), "--controller.quorum.voters", strings.Join(voters, ","),
			"--log.dirs", t.TempDir()}, args...)
		c.argv[id] = argv
		c.procs[id] = runBrokerProcess(t, limits{}, argv...)
	}
	for id, p := range c.procs {
		require.Eventually(t, func() bool { return p.served() || p.hasExited() }, 30*time.Second, 10*time.Millisecond,
			"broker %d starts", id)
		require.False(t, p.hasExited(), "broker %d exited at start:\n%s", id, p.output())
	}
	return c
}

// restart starts broker id again, on its log dir and ports, once its
// process has exited, and waits until it serves.
func (c *processCluster) restart(id int32) {
	c.t.Helper()
	<-c.procs[id].exited
	p := runBrokerProcess(c.t, limits{}, c.argv[id]...)
	c.procs[id] = p
	require.Eventually(c.t, func() bool { return p.served() || p.hasExited() }, 30*time.Second, 10*time.Millisecond,
		"broker %d starts again", id)
	require.False(c.t, p.hasExited(), "broker %d exited at its restart:\n%s", id, p.output())
}

func (c *processCluster) seeds() []string {
	return []string{c.addrs[1], c.addrs[2], c.addrs[3]}
}

// client returns a kgo client of the cluster, closed at the end of the
// test. Its metadata may be refreshed every 100ms, so that it finds a new
// leader as soon as the cluster has one.
func (c *processCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	require.NoError(c.t, err)
	c.t.Cleanup(cl.Close)
	return cl
}

// createTopic creates topic with replication factor 3 once a controller
// is elected, and waits until every running broker's Metadata shows each
// partition led.
func (c *processCluster) createTopic(cl *kgo.Client, topic string, partitions int32, configs map[string]string) {
	c.t.Helper()
	c.createTopicRF(cl, topic, partitions, 3, configs)
}

// createTopicRF is createTopic with replication factor rf.
func (c *processCluster) createTopicRF(cl *kgo.Client, topic string, partitions int32, rf int16, configs map[string]string) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
	require.Eventually(c.t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false
		}
		code := resp.Topics[0].ErrorCode
		return code == 0 || code == kerr.TopicAlreadyExists.Code
	}, 30*time.Second, 50*time.Millisecond, "a controller is elected and creates %s", topic)
	for id := int32(1); id <= 3; id++ {
		if c.procs[id].hasExited() {
			continue
		}
		require.Eventually(c.t, func() bool {
			mt, ok := c.metadata(cl, id, topic)
			if !ok || len(mt.Partitions) != int(partitions) {
				return false
			}
			for _, p := range mt.Partitions {
				if p.ErrorCode != 0 {
					return false
				}
			}
			return true
		}, 10*time.Second, 10*time.Millisecond, "broker %d has %s", id, topic)
	}
}

// awaitPartition0 waits until broker id describes partition 0 of topic as
// cond wants it, and returns that description; past wait the test fails,
// with every broker's goroutines in its log (eventually).
func (c *processCluster) awaitPartition0(admin *kgo.Client, id int32, topic string, wait time.Duration, msg string,
	cond func(kmsg.MetadataResponseTopicPartition) bool) kmsg.MetadataResponseTopicPartition {
	c.t.Helper()
	var p0 kmsg.MetadataResponseTopicPartition
	c.eventually(func() bool {
		mt, ok := c.metadata(admin, id, topic)
		if !ok {
			return false
		}
		p0 = mt.Partitions[0]
		return cond(p0)
	}, wait, 5*time.Millisecond, msg)
	return p0
}

// metadata returns topic as broker id describes it.
func (c *processCluster) metadata(cl *kgo.Client, id int32, topic string) (kmsg.MetadataResponseTopic, bool) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return kmsg.MetadataResponseTopic{}, false
	}
	return resp.Topics[0], true
}

// failoverLoad produces record i to partition i mod partitions, acks=all
// and idempotent, until stopped, noting every acknowledgement.
type failoverLoad struct {
	ledger *ackLedger
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	ackAt    map[int32]time.Time // the last acknowledgement's time, by partition
	errors   int
	firstErr error
}

func startFailoverLoad(prod *kgo.Client, partitions int) *failoverLoad {
	l := &failoverLoad{ledger: &ackLedger{acked: make(map[string]int64), ends: make(map[int32]int64)},
		stop: make(chan struct{}), done: make(chan struct{}), ackAt: make(map[int32]time.Time)}
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			default:
			}
			r := &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "r%07d", i)}
			l.ledger.mu.Lock()
			l.ledger.produced++
			l.ledger.mu.Unlock()
			prod.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				if err != nil {
					l.mu.Lock()
					l.errors++
					if l.firstErr == nil {
						l.firstErr = err
					}
					l.mu.Unlock()
					return
				}
				l.ledger.mu.Lock()
				l.ledger.acked[string(r.Value)] = r.Offset
				l.ledger.ends[r.Partition] = max(l.ledger.ends[r.Partition], r.Offset+1)
				l.ledger.mu.Unlock()
				l.mu.Lock()
				l.ackAt[r.Partition] = time.Now()
				l.mu.Unlock()
			})
		}
	}()
	return l
}

// acked returns how many records are acknowledged, and on how many
// partitions.
func (l *failoverLoad) acked() (int, int) {
	l.ledger.mu.Lock()
	defer l.ledger.mu.Unlock()
	return len(l.ledger.acked), len(l.ledger.ends)
}

// lastAck returns when partition p last had a record acknowledged.
func (l *failoverLoad) lastAck(p int32) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ackAt[p]
}

// startLoad creates topic (replication factor 3, min.insync.replicas 2),
// starts an acks=all load on it and waits for 300 acknowledgements over
// every partition, with opts added to the producer's; it returns the admin and producing clients, the load,
// and the topic as broker 1 then describes it.
func (c *processCluster) startLoad(topic string, partitions int32, opts ...kgo.Opt) (admin, prod *kgo.Client, load *failoverLoad, before kmsg.MetadataResponseTopic) {
	t := c.t
	t.Helper()
	admin = c.client()
	c.createTopic(admin, topic, partitions, map[string]string{"min.insync.replicas": "2"})
	prod = c.client(append([]kgo.Opt{kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30 * time.Second)}, opts...)...)
	load = startFailoverLoad(prod, int(partitions))
	require.Eventually(t, func() bool {
		n, parts := load.acked()
		return n >= 300 && parts == int(partitions)
	}, 30*time.Second, 10*time.Millisecond, "the cluster acknowledges")
	before, ok := c.metadata(admin, 1, topic)
	require.True(t, ok)
	return admin, prod, load, before
}

// finish waits for 300 more acknowledgements, stops the load, flushes the
// producer, and reads the topic back: every acknowledged record once, at
// its offset (ackLedger.check), and every record in the log acknowledged,
// none left unanswered.
func (l *failoverLoad) finish(t *testing.T, c *processCluster, prod *kgo.Client, topic string, partitions int32) {
	t.Helper()
	n, _ := l.acked()
	require.Eventually(t, func() bool {
		m, _ := l.acked()
		return m >= n+300
	}, 30*time.Second, 10*time.Millisecond, "the producer goes on")
	close(l.stop)
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, prod.Flush(ctx), "every record is answered")

	consumer := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ends := endOffsets(t, consumer, topic, partitions)
	total := l.ledger.check(t, consumeTo(t, consumer, ends))
	n, _ = l.acked()
	t.Logf("%d records in the log, %d acknowledged, %d failed", total, n, l.errors)
	assert.Equal(t, n, total, "every record in the log was acknowledged: none was left unanswered")
}

// TestFailoverKill9Leader: three broker binaries, each a voter of the
// metadata quorum with its own log dir, hold a topic of three partitions
// with replication factor 3 and min.insync.replicas 2, which an
// idempotent acks=all franz-go producer writes to. The leader of partition
// 0 is killed with SIGKILL. The active controller (another broker, or a
// new one the quorum elects if the killed broker was it) fences it when
// its session expires and elects a new leader from the ISR with a bumped
// leader epoch; the producer goes on with the same client, and its first
// acknowledgement on partition 0 comes within the session timeout plus
// 3s. At the end every acknowledged record is read back exactly once, in
// order, at the offset it was acknowledged with.
func TestFailoverKill9Leader(t *testing.T) {
	const (
		topic      = "failover"
		partitions = 3
		session    = 1500 * time.Millisecond
	)
	c := startProcessCluster(t, "--broker.heartbeat.interval.ms", "250",
		"--broker.session.timeout.ms", strconv.Itoa(int(session.Milliseconds())),
		"--controller.quorum.election.timeout.ms", "300", "--replica.fetch.backoff.ms", "50",
		"--default.replication.factor", "3")
	admin, prod, load, before := c.startLoad(topic, partitions)
	leader, epoch := before.Partitions[0].Leader, before.Partitions[0].LeaderEpoch
	require.NoError(t, c.procs[leader].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	t.Logf("killed broker %d, the leader of partition 0 at epoch %d", leader, epoch)

	// A new leader, as a survivor's Metadata says. (An acknowledgement
	// that comes after the kill may still be the old leader's, answered
	// just before it: only one after the election counts.)
	survivor := leader%3 + 1
	p0 := c.awaitPartition0(admin, survivor, topic, 30*time.Second, "a new leader is elected",
		func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader >= 0 && p.Leader != leader })
	elected := time.Now()
	assert.Greater(t, p0.LeaderEpoch, epoch, "at a new leader epoch")
	assert.NotContains(t, p0.ISR, leader, "the fenced broker left the ISR")
	assert.Contains(t, p0.OfflineReplicas, leader, "and is listed offline")

	require.Eventually(t, func() bool { return load.lastAck(0).After(elected) }, 30*time.Second, 5*time.Millisecond,
		"partition 0 takes acks=all produces again")
	failover := load.lastAck(0).Sub(killed)
	t.Logf("broker %d elected %v after the kill; an acknowledgement on partition 0 %v after it", p0.Leader,
		elected.Sub(killed), failover)
	assert.Less(t, failover, session+3*time.Second, "failover within the session timeout plus 3s")

	// More acknowledgements after the failover, on every partition.
	load.finish(t, c, prod, topic, partitions)
}

// TestFailoverKill9Follower: as TestFailoverKill9Leader, but a follower of
// partition 0 is killed. Its leader's acks=all produces wait for it only
// until its session expires and the controller fences it, which takes it
// out of the ISR (broker.session.timeout.ms, 1.5s here), not until
// replica.lag.time.max.ms (30s) would have the leader drop it; leadership
// stays where it was, and every acknowledged record is read back once.
func TestFailoverKill9Follower(t *testing.T) {
	const (
		topic      = "follower"
		partitions = 3
		session    = 1500 * time.Millisecond
	)
	c := startProcessCluster(t, "--broker.heartbeat.interval.ms", "250",
		"--broker.session.timeout.ms", strconv.Itoa(int(session.Milliseconds())),
		"--controller.quorum.election.timeout.ms", "300", "--replica.fetch.backoff.ms", "50")
	admin, prod, load, before := c.startLoad(topic, partitions)
	leader, epoch := before.Partitions[0].Leader, before.Partitions[0].LeaderEpoch
	follower := before.Partitions[0].Replicas[1]
	require.NotEqual(t, leader, follower)
	require.NoError(t, c.procs[follower].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	t.Logf("killed broker %d, a follower of partition 0 (led by %d)", follower, leader)

	p0 := c.awaitPartition0(admin, leader, topic, 30*time.Second, "the follower leaves the ISR",
		func(p kmsg.MetadataResponseTopicPartition) bool { return !slices.Contains(p.ISR, follower) })
	shrunk := time.Now()
	assert.Equal(t, leader, p0.Leader, "leadership stays")
	assert.Equal(t, epoch, p0.LeaderEpoch, "at the same leader epoch")
	assert.Contains(t, p0.OfflineReplicas, follower)

	require.Eventually(t, func() bool { return load.lastAck(0).After(shrunk) }, 30*time.Second, 5*time.Millisecond,
		"partition 0 acknowledges acks=all produces again")
	stall := load.lastAck(0).Sub(killed)
	t.Logf("the follower left the ISR %v after the kill; an acknowledgement on partition 0 %v after it", shrunk.Sub(killed), stall)
	assert.Less(t, stall, session+3*time.Second, "the stall ends with the follower's session, not replica.lag.time.max.ms")

	load.finish(t, c, prod, topic, partitions)
}

// TestControlledShutdownMovesLeadership: SIGTERM to the leader of
// partition 0, under the same load: before it stops, the controller fences
// it at its request, so partition 0 gets a new leader from its ISR at
// once, with no session timeout; the producer sees no error (the
// produces that waited at the old leader are answered
// NOT_LEADER_OR_FOLLOWER and retried at the new one, idempotently), the
// broker exits cleanly, and every acknowledged record is read back once.
func TestControlledShutdownMovesLeadership(t *testing.T) {
	const (
		topic      = "shutdown"
		partitions = 3
	)
	c := startProcessCluster(t, "--broker.heartbeat.interval.ms", "250", "--broker.session.timeout.ms", "9000",
		"--controller.quorum.election.timeout.ms", "300", "--replica.fetch.backoff.ms", "50")
	admin, prod, load, before := c.startLoad(topic, partitions)
	leader, epoch := before.Partitions[0].Leader, before.Partitions[0].LeaderEpoch
	stopped := time.Now()
	c.procs[leader].stop() // SIGTERM, and a clean exit
	t.Logf("broker %d, the leader of partition 0, stopped in %v", leader, time.Since(stopped))

	// The old leader stopped once it had applied its fencing; a survivor
	// applies the same record within moments, not a session timeout.
	survivor := leader%3 + 1
	p0 := c.awaitPartition0(admin, survivor, topic, time.Second, "a new leader at once: no session timeout (9s)",
		func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader >= 0 && p.Leader != leader })
	assert.Greater(t, p0.LeaderEpoch, epoch)
	assert.NotContains(t, p0.ISR, leader)
	moved := time.Now()
	require.Eventually(t, func() bool { return load.lastAck(0).After(moved) }, 10*time.Second, 5*time.Millisecond,
		"partition 0 takes acks=all produces at its new leader")
	t.Logf("an acknowledgement on partition 0 %v after the SIGTERM", load.lastAck(0).Sub(stopped))
	assert.Less(t, load.lastAck(0).Sub(stopped), 5*time.Second, "well within the 9s session timeout")

	load.finish(t, c, prod, topic, partitions)
	assert.Zero(t, load.errors, "no produce error reached the client; the first: %v", load.firstErr)
}
