package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// faultArgs are the fault tests' broker settings: a 1.5s session, 250ms
// heartbeats, a quorum that elects within a second.
var faultArgs = []string{"--broker.heartbeat.interval.ms", "250", "--broker.session.timeout.ms", "1500",
	"--controller.quorum.election.timeout.ms", "300", "--replica.fetch.backoff.ms", "50"}

// TestStopContLeaderIsFenced: the leader of partition 0 is frozen with
// SIGSTOP past its 1.5s session, under an idempotent acks=all load: the
// controller fences it and elects a new leader at a bumped epoch. Then
// SIGCONT: the old leader, which still believes it leads and holds the
// produces it took before the freeze in its purgatory, on connections the
// producer keeps open (a frozen broker's kernel still holds them, and the
// producer waits 10s plus 10s for an answer), must learn from the metadata
// log that it is fenced and answer those produces with an error rather
// than an acknowledgement (its followers now fetch from the new leader),
// then come back as a follower of the new leader, in its ISR. The producer
// goes on at the new leader. No split brain: every acknowledged record is
// read back exactly once, at the offset it was acknowledged with, and
// nothing in the log went unanswered.
func TestStopContLeaderIsFenced(t *testing.T) {
	const topic, partitions = "stopped", 3
	c := startProcessCluster(t, faultArgs...)
	admin, prod, load, before := c.startLoad(topic, partitions)
	leader, epoch := before.Partitions[0].Leader, before.Partitions[0].LeaderEpoch
	require.NoError(t, c.procs[leader].cmd.Process.Signal(syscall.SIGSTOP))
	stopped := time.Now()
	t.Logf("froze broker %d, the leader of partition 0 at epoch %d", leader, epoch)

	survivor := leader%3 + 1
	p0 := c.awaitPartition0(admin, survivor, topic, 30*time.Second, "a new leader is elected while the old one is frozen",
		func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader >= 0 && p.Leader != leader })
	elected := time.Now()
	assert.Greater(t, p0.LeaderEpoch, epoch)
	t.Logf("broker %d elected %v after the freeze at epoch %d", p0.Leader, elected.Sub(stopped), p0.LeaderEpoch)

	require.NoError(t, c.procs[leader].cmd.Process.Signal(syscall.SIGCONT))
	resumed := time.Now()
	// The old leader, asked itself, names the new leader at the new epoch
	// (or a later one), and rejoins the ISR once it has caught up.
	require.Eventually(t, func() bool {
		mine, ok := c.metadata(admin, leader, topic)
		if !ok {
			return false
		}
		q := mine.Partitions[0]
		return q.Leader >= 0 && q.Leader != leader && q.LeaderEpoch >= p0.LeaderEpoch
	}, 30*time.Second, 5*time.Millisecond, "the old leader learns it no longer leads")
	t.Logf("broker %d knew it was no longer leader %v after SIGCONT", leader, time.Since(resumed))
	require.Eventually(t, func() bool { return load.lastAck(0).After(resumed) }, 30*time.Second, 5*time.Millisecond,
		"partition 0 acknowledges again, at the new leader")
	t.Logf("an acknowledgement on partition 0 %v after SIGCONT", load.lastAck(0).Sub(resumed))
	require.Eventually(t, func() bool {
		after, ok := c.metadata(admin, survivor, topic)
		return ok && slices.Contains(after.Partitions[0].ISR, leader)
	}, 30*time.Second, 10*time.Millisecond, "the old leader rejoins the ISR as a follower")
	t.Logf("broker %d back in the ISR of partition 0 %v after SIGCONT", leader, time.Since(resumed))

	load.finish(t, c, prod, topic, partitions)
}

// TestControllerKill9Takeover: the active controller (the metadata
// quorum's Raft leader, Metadata's ControllerID) is killed with SIGKILL;
// another voter takes over, as both survivors' Metadata says, and the new
// controller creates a topic, which takes an acks=all produce and reads it
// back.
func TestControllerKill9Takeover(t *testing.T) {
	c := startProcessCluster(t, faultArgs...)
	admin := c.client()
	c.createTopic(admin, "before", 1, nil)
	ctl := controllerID(t, admin, 1)
	require.GreaterOrEqual(t, ctl, int32(1))
	require.NoError(t, c.procs[ctl].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	<-c.procs[ctl].exited
	for id := int32(1); id <= 3; id++ {
		if id == ctl {
			continue
		}
		require.Eventually(t, func() bool {
			now := controllerID(t, admin, id)
			return now >= 1 && now != ctl
		}, 30*time.Second, 5*time.Millisecond, "broker %d sees a new controller", id)
	}
	t.Logf("killed controller %d; broker %d took over within %v", ctl, controllerID(t, admin, ctl%3+1), time.Since(killed))

	const topic = "after"
	c.createTopic(admin, topic, 3, map[string]string{"min.insync.replicas": "2"})
	t.Logf("%s created %v after the kill", topic, time.Since(killed))
	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(30*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := map[string]bool{}
	for i := range 30 {
		v := fmt.Sprintf("v%02d", i)
		want[v] = true
		require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr())
	}
	consumer := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeTo(t, consumer, endOffsets(t, consumer, topic, 3))
	seen := map[string]bool{}
	for _, recs := range got {
		for _, r := range recs {
			require.False(t, seen[string(r.Value)], "%s once", r.Value)
			seen[string(r.Value)] = true
		}
	}
	assert.Equal(t, want, seen, "every record produced after the takeover is read back")
}

// controllerID returns the controller broker id names, or -1.
func controllerID(t *testing.T, cl *kgo.Client, id int32) int32 {
	req := kmsg.NewPtrMetadataRequest()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return -1
	}
	return resp.ControllerID
}

// TestChaos: under the acks=all idempotent load, a random broker is killed
// with SIGKILL and restarted on its log dir, or frozen with SIGSTOP and
// resumed, every few seconds, for PURGATORY_CHAOS_DURATION (a Go duration,
// 20s unless set; make chaos runs it for 5m). At most one broker is down at
// a time: the next fault waits until every broker names all three replicas
// of every partition in sync. At the end every acknowledged record is read
// back exactly once, at its offset.
func TestChaos(t *testing.T) {
	const topic, partitions = "chaos", 3
	duration := 20 * time.Second
	if s := os.Getenv("PURGATORY_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, "PURGATORY_CHAOS_DURATION")
		duration = d
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d, for %v", seed, duration)
	c := startProcessCluster(t, faultArgs...)
	admin, prod, load, _ := c.startLoad(topic, partitions)
	faults := 0
	for end := time.Now().Add(duration); time.Now().Before(end); faults++ {
		id := int32(rng.IntN(3) + 1)
		down := time.Duration(500+rng.IntN(2500)) * time.Millisecond // a fault's length, not a verdict
		start := time.Now()
		if rng.IntN(2) == 0 {
			require.NoError(t, c.procs[id].cmd.Process.Signal(syscall.SIGKILL))
			<-c.procs[id].exited
			time.Sleep(down)
			c.restart(id)
			t.Logf("fault %d: broker %d killed and restarted after %v", faults, id, down)
		} else {
			require.NoError(t, c.procs[id].cmd.Process.Signal(syscall.SIGSTOP))
			time.Sleep(down)
			require.NoError(t, c.procs[id].cmd.Process.Signal(syscall.SIGCONT))
			t.Logf("fault %d: broker %d frozen for %v", faults, id, down)
		}
		require.Eventually(t, func() bool { return c.allInSync(admin, topic, partitions) }, 60*time.Second,
			20*time.Millisecond, "broker %d back in every ISR", id)
		t.Logf("fault %d: every ISR full again %v after the fault began", faults, time.Since(start))
	}
	n, _ := load.acked()
	t.Logf("%d faults, %d acknowledgements so far", faults, n)
	load.finish(t, c, prod, topic, partitions)
}

// allInSync reports whether every broker names three replicas in sync for
// every partition of topic.
func (c *processCluster) allInSync(cl *kgo.Client, topic string, partitions int32) bool {
	for id := int32(1); id <= 3; id++ {
		mt, ok := c.metadata(cl, id, topic)
		if !ok || len(mt.Partitions) != int(partitions) {
			return false
		}
		for _, p := range mt.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 || len(p.ISR) != 3 {
				return false
			}
		}
	}
	return true
}

// eventually is require.Eventually, but on failure it first has every
// running broker print its goroutines (SIGQUIT) into its log, which the
// test prints, so that a stall can be told from a slow machine.
func (c *processCluster) eventually(cond func() bool, wait, tick time.Duration, msg string) {
	c.t.Helper()
	if assert.Eventually(c.t, cond, wait, tick, msg) {
		return
	}
	for _, p := range c.procs {
		if !p.hasExited() {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		}
	}
	for _, p := range c.procs {
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
		}
	}
	c.t.FailNow()
}
