package test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
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
		b.Run(fmt.Sprintf("session=%d/heartbeat=%d", set.session, set.heartbeat), func(b *testing.B) {
			for range b.N {
				times := failoverTimes(b, kills, set.session, set.heartbeat)
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

// failoverTimes starts a cluster and returns kills failover times.
func failoverTimes(b *testing.B, kills, session, heartbeat int) []time.Duration {
	const topic = "failover"
	c := startProcessCluster(b, "--broker.heartbeat.interval.ms", strconv.Itoa(heartbeat),
		"--broker.session.timeout.ms", strconv.Itoa(session),
		"--controller.quorum.election.timeout.ms", "300", "--replica.fetch.backoff.ms", "50")
	admin := c.client()
	c.createTopic(admin, topic, 1, map[string]string{"min.insync.replicas": "2"})
	prod := c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(60*time.Second))
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
			prod.Produce(context.Background(), &kgo.Record{Value: []byte("x")}, func(_ *kgo.Record, err error) {
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
		require.Eventually(b, func() bool { return c.allInSync(admin, topic, 1) }, 60*time.Second, 20*time.Millisecond,
			"every ISR full before kill %d", k)
		settled := time.Now()
		require.Eventually(b, func() bool { return lastAck().After(settled) }, 30*time.Second, 5*time.Millisecond,
			"acknowledgements before kill %d", k)
		before, ok := c.metadata(admin, 1, topic)
		require.True(b, ok)
		leader := before.Partitions[0].Leader
		require.NoError(b, c.procs[leader].cmd.Process.Signal(syscall.SIGKILL))
		killed := time.Now()
		survivor := leader%3 + 1
		require.Eventually(b, func() bool {
			after, ok := c.metadata(admin, survivor, topic)
			return ok && after.Partitions[0].Leader >= 0 && after.Partitions[0].Leader != leader
		}, 60*time.Second, 2*time.Millisecond, "a new leader after kill %d", k)
		elected := time.Now()
		require.Eventually(b, func() bool { return lastAck().After(elected) }, 60*time.Second, 2*time.Millisecond,
			"an acknowledgement from the new leader after kill %d", k)
		times = append(times, lastAck().Sub(killed))
		b.Logf("kill %d: broker %d, elected after %v, acknowledged after %v", k, leader, elected.Sub(killed), times[k])
		c.restart(leader)
	}
	return times
}
