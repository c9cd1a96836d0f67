package kfakecmp

import (
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkTxnProduce produces 100-byte records in transactions of 1000
// (acks=all, one kgo transactional producer, each transaction committed
// before the next begins) to a three-broker cluster: ns/op is per record.
// broker=purgatory3 is three example brokers (replication factor 3,
// min.insync.replicas 2), broker=kfake3 kfake with three brokers, each in
// its own process.
func BenchmarkTxnProduce(b *testing.B) {
	const perTxn = 1000
	for _, kind := range append(clusters, brokers...) {
		b.Run("broker="+kind, func(b *testing.B) {
			br := startBroker(b, kind)
			ctx := context.Background()
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.seeds()...), kgo.DefaultProduceTopic("txn"),
				kgo.TransactionalID("bench-txn"), kgo.MaxBufferedRecords(1<<16), kgo.AllowAutoTopicCreation(),
				kgo.RecordRetries(50), kgo.UnknownTopicRetries(-1))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			value := make([]byte, 100)
			txn := func(n int) {
				if err := cl.BeginTransaction(); err != nil {
					b.Fatal(err)
				}
				var failed atomic.Int64
				for range n {
					cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
						if err != nil {
							failed.Add(1)
						}
					})
				}
				if err := cl.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				if n := failed.Load(); n > 0 {
					b.Fatalf("%d records failed", n)
				}
				if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
					b.Fatal(err)
				}
			}
			txn(1) // create the topic, find the coordinator, warm up
			u0 := br.usage(b)
			b.ResetTimer()
			for left := b.N; left > 0; left -= perTxn {
				txn(min(left, perTxn))
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			u := br.usage(b).sub(u0)
			b.ReportMetric(float64(u.cpu)/float64(b.N), "broker-cpu-ns/record")
		})
	}
}

// BenchmarkEndToEndLatencyTxn is BenchmarkEndToEndLatency with a
// transaction per record on one broker: the producer begins, produces one
// record and commits; a read_committed consumer (isolation=committed) or
// a read_uncommitted one (isolation=uncommitted) long-polls (max wait 5s);
// each record is timed from its produce call to its arrival. A
// read_committed consumer gets the record once the commit marker moves the
// last stable offset.
func BenchmarkEndToEndLatencyTxn(b *testing.B) {
	for _, iso := range []string{"committed", "uncommitted"} {
		for _, kind := range brokers {
			b.Run("isolation="+iso+"/broker="+kind, func(b *testing.B) {
				br := startBroker(b, kind)
				ctx := context.Background()
				prod, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.DefaultProduceTopic("e2e-txn"),
					kgo.TransactionalID("e2e-txn"), kgo.AllowAutoTopicCreation(), kgo.ProducerLinger(0))
				if err != nil {
					b.Fatal(err)
				}
				defer prod.Close()
				commit := func(r *kgo.Record) time.Time {
					if err := prod.BeginTransaction(); err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
						b.Fatal(err)
					}
					if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
						b.Fatal(err)
					}
					return start
				}
				commit(&kgo.Record{Value: []byte("create")})
				level := kgo.ReadUncommitted()
				if iso == "committed" {
					level = kgo.ReadCommitted()
				}
				cons, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.ConsumeTopics("e2e-txn"),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(5*time.Second),
					kgo.FetchIsolationLevel(level))
				if err != nil {
					b.Fatal(err)
				}
				defer cons.Close()
				arrived := make(chan int, 1)
				arrivedAt := make(chan time.Time, 1)
				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					for {
						fs := cons.PollFetches(ctx)
						select {
						case <-stop:
							return
						default:
						}
						fs.EachRecord(func(r *kgo.Record) {
							if len(r.Value) == 8 {
								arrivedAt <- time.Now()
								arrived <- int(binary.BigEndian.Uint64(r.Value))
							}
						})
					}
				})
				commit(&kgo.Record{Value: binary.BigEndian.AppendUint64(nil, 1<<62)})
				<-arrivedAt
				<-arrived

				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					start := commit(&kgo.Record{Value: binary.BigEndian.AppendUint64(nil, uint64(i))})
					for {
						at := <-arrivedAt
						if <-arrived == i {
							lat = append(lat, at.Sub(start))
							break
						}
					}
				}
				b.StopTimer()
				close(stop)
				commit(&kgo.Record{Value: []byte("wake")}) // end the last poll
				wg.Wait()
				slices.Sort(lat)
				us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
				b.ReportMetric(us(lat[len(lat)/2]), "p50-µs")
				b.ReportMetric(us(lat[len(lat)*99/100]), "p99-µs")
			})
		}
	}
}
