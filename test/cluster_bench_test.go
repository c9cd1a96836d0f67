package test

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The three brokers run in this process, next to the client, on the same
// two cores: the figures are the whole cluster's cost, replication
// included, not one broker's.

// BenchmarkClusterProduceAcksAll produces 100-byte records with acks=all
// to a topic of replication factor 3 on three brokers, as fast as one kgo
// producer pipelines them, spread over 1 or 12 partitions (whose leaders
// are spread over the brokers). ns/op is per record.
func BenchmarkClusterProduceAcksAll(b *testing.B) {
	for _, partitions := range []int32{1, 12} {
		b.Run("partitions="+strconv.Itoa(int(partitions)), func(b *testing.B) {
			cl, topic := benchCluster(b, partitions)
			ctx := context.Background()
			value := make([]byte, 100)
			var failed atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: value}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d records failed", n)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkClusterProduceLatency sends one acks=all record at a time and
// reports the p50 and p99 of the time to its answer: an append at the
// leader, a fetch by each follower completed by that append, their next
// fetches moving the high watermark, and the produce completed in the
// leader's purgatory.
func BenchmarkClusterProduceLatency(b *testing.B) {
	for _, partitions := range []int32{1, 12} {
		b.Run("partitions="+strconv.Itoa(int(partitions)), func(b *testing.B) {
			cl, topic := benchCluster(b, partitions)
			ctx := context.Background()
			value := make([]byte, 100)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// benchCluster starts three brokers and a topic of replication factor 3,
// and returns an acks=all producer, its connections warm.
func benchCluster(b *testing.B, partitions int32) (*kgo.Client, string) {
	c := startCluster(b, 3)
	cl := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(1<<16))
	topic := "bench-" + strconv.Itoa(int(partitions))
	c.createTopic(cl, topic, partitions, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 * partitions { // a batch per record: the sticky partitioner moves on after each
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("warm")}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	return cl, topic
}
