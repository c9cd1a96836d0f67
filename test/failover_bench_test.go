package test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFailover measures failover: PURGATORY_FAILOVER_KILLS times (20
// unless set), the leader of a partition of three replicas
// (min.insync.replicas 2) is killed with SIGKILL under an acks=all
// idempotent producer sending a record every 2ms, and the time from the
// kill to the first acknowledgement after a survivor names a new leader is
// taken; the killed broker is then restarted and the next kill waits until
// the ISR is full again. It reports the p50, p99 and max of those times,
// with Kafka's session defaults (broker.session.timeout.ms 9000,
// broker.heartbeat.interval.ms 2000) and with 1000/250. Run it with make
// bench-failover; -benchtime 1x, as each run is all its kills.
func BenchmarkFailover(b *testing.B) {
	kills := 20
	if s := os.Getenv("PURGATORY_FAILOVER_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err, "PURGATORY_FAILOVER_KILLS")
		kills = n
	}
	for _, set := range []struct{ session, heartbeat int }{{9000, 2000}, {1000, 250}} {
		for _, victim := range []string{"leader", "leader+controller"} {
			b.Run(fmt.Sprintf("session=%d/heartbeat=%d/kill=%s", set.session, set.heartbeat, victim), func(b *testing.B) {
				for range b.N {
					times := failoverTimes(b, kills, set.session, set.heartbeat, victim == "leader+controller")
					slices.Sort(times)
					pct := func(p float64) time.Duration { return times[min(len(times)-1, int(p*float64(len(times))))] }
					b.ReportMetric(float64(pct(0.50).Milliseconds()), "p50-ms")
					b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
					b.ReportMetric(float64(times[len(times)-1].Milliseconds()), "max-ms")
					b.Logf("%d kills: %v", len(times), times)
				}
			})
		}
	}
}

// failoverTimes starts a cluster and returns kills failover times. With
// controller, the broker killed is the active controller (the quorum's
// election timeout is then the default, 1s, not 300ms), and the
// partition watched one it leads: the topic has three partitions, one
// preferred by each broker, whose leaderships ElectLeaders gives back
// after each restart, and the producer writes to the controller's.
func failoverTimes(b *testing.B, kills, session, heartbeat int, controller bool) []time.Duration {
	const topic = "failover"
	election := "300"
	if controller {
		election = "1000" // the default: the controller's kill waits for a Raft election
	}
	c := startProcessCluster(b, "--broker.heartbeat.interval.ms", strconv.Itoa(heartbeat),
		"--broker.session.timeout.ms", strconv.Itoa(session),
		"--controller.quorum.election.timeout.ms", election, "--replica.fetch.backoff.ms", "50")
	admin := c.client()
	partitions := int32(1)
	if controller {
		partitions = 3
	}
	c.createTopic(admin, topic, partitions, map[string]string{"min.insync.replicas": "2"})
	var target atomic.Int32 // the partition produced to and watched
	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var (
		mu    sync.Mutex
		ackAt time.Time
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			prod.Produce(context.Background(), &kgo.Record{Value: []byte("x"), Partition: target.Load()}, func(_ *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					ackAt = time.Now()
					mu.Unlock()
				}
			})
		}
	}()
	defer func() { close(stop); <-done }()
	lastAck := func() time.Time { mu.Lock(); defer mu.Unlock(); return ackAt }
	var times []time.Duration
	for k := range kills {
		require.Eventually(b, func() bool { return c.allInSync(admin, topic, partitions) }, 60*time.Second, 20*time.Millisecond,
			"every ISR full before kill %d", k)
		if controller {
			target.Store(controllerPartition(b, c, admin, topic))
		}
		p := target.Load()
		settled := time.Now()
		require.Eventually(b, func() bool { return lastAck().After(settled) }, 30*time.Second, 5*time.Millisecond,
			"acknowledgements before kill %d", k)
		before, ok := c.metadata(admin, 1, topic)
		require.True(b, ok)
		leader := before.Partitions[p].Leader
		require.NoError(b, c.procs[leader].cmd.Process.Signal(syscall.SIGKILL))
		killed := time.Now()
		survivor := leader%3 + 1
		require.Eventually(b, func() bool {
			after, ok := c.metadata(admin, survivor, topic)
			return ok && after.Partitions[p].Leader >= 0 && after.Partitions[p].Leader != leader
		}, 60*time.Second, 2*time.Millisecond, "a new leader after kill %d", k)
		elected := time.Now()
		require.Eventually(b, func() bool { return lastAck().After(elected) }, 60*time.Second, 2*time.Millisecond,
			"an acknowledgement from the new leader after kill %d", k)
		times = append(times, lastAck().Sub(killed))
		b.Logf("kill %d: broker %d, elected after %v, acknowledged after %v", k, leader, elected.Sub(killed), times[k])
		if times[k] > 2*time.Duration(session)*time.Millisecond {
			// An outlier: what each survivor logged since the kill says why.
			for id := int32(1); id <= 3; id++ {
				if id != leader {
					b.Logf("kill %d took %v; broker %d logged:\n%s", k, times[k], id, c.procs[id].outputSince(killed))
				}
			}
		}
		c.restart(leader)
	}
	return times
}

// controllerPartition gives every partition of topic back to its
// preferred replica (ElectLeaders), waits until the active controller
// leads one, and returns it.
func controllerPartition(b *testing.B, c *processCluster, admin *kgo.Client, topic string) int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var p int32 = -1
	require.Eventually(b, func() bool {
		_, _ = kadm.NewClient(admin).ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
		if err != nil || meta.ControllerID < 0 {
			return false
		}
		for _, t := range meta.Topics {
			if t.Topic == nil || *t.Topic != topic {
				continue
			}
			for _, mp := range t.Partitions {
				if mp.Leader == meta.ControllerID && len(mp.ISR) == 3 {
					p = mp.Partition
					return true
				}
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the active controller leads a partition")
	return p
}
