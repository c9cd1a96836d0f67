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

// Every benchmark runs once per broker, as sub-benchmarks broker=purgatory
// and broker=kfake of one run, for benchstat -col /broker.

// BenchmarkProduceAcksAll produces 100-byte records to one partition with
// acks=all, as fast as one kgo producer pipelines them: ns/op is per record.
func BenchmarkProduceAcksAll(b *testing.B) {
	for _, kind := range brokers {
		b.Run("broker="+kind, func(b *testing.B) {
			produceAcksAll(b, startBroker(b, kind))
		})
	}
}

// produceAcksAll is BenchmarkProduceAcksAll's body against br, the
// client's opts added (a transport's).
func produceAcksAll(b *testing.B, br *child, opts ...kgo.Opt) {
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(br.addr), kgo.DefaultProduceTopic("produce"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(1<<16), kgo.AllowAutoTopicCreation())...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	value := make([]byte, 100)
	// Create the topic and warm the connection up (retried while a
	// secure broker's start is still creating its SCRAM credential).
	warm(b, ctx, cl, value)
	var failed atomic.Int64
	u0 := br.usage(b)
	b.ResetTimer()
	for range b.N {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
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
	u := br.usage(b).sub(u0)
	b.ReportMetric(float64(u.cpu)/float64(b.N), "broker-cpu-ns/record")
	b.ReportMetric(float64(u.alloc)/float64(b.N), "broker-B/record")
}

// BenchmarkEndToEndLatency produces one record at a time (acks=all) to a
// partition a consumer long-polls (max wait 5s) and times each record from
// the produce call to its arrival at the consumer.
func BenchmarkEndToEndLatency(b *testing.B) {
	for _, kind := range brokers {
		b.Run("broker="+kind, func(b *testing.B) {
			br := startBroker(b, kind)
			ctx := context.Background()
			prod, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.DefaultProduceTopic("e2e"),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation(),
				kgo.ProducerLinger(0)) // the client's linger would hide the brokers' latency
			if err != nil {
				b.Fatal(err)
			}
			defer prod.Close()
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("create")}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			cons, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.ConsumeTopics("e2e"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(5*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Close()

			// The consumer stamps each record's arrival; a record carries
			// its sequence number.
			arrived := make(chan int, 1)
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
							arrived <- int(binary.BigEndian.Uint64(r.Value))
						}
					})
				}
			})
			// Let the consumer's first fetch reach the broker and wait.
			warm := &kgo.Record{Value: binary.BigEndian.AppendUint64(nil, 1<<62)}
			if err := prod.ProduceSync(ctx, warm).FirstErr(); err != nil {
				b.Fatal(err)
			}
			<-arrived

			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				prod.Produce(ctx, &kgo.Record{Value: binary.BigEndian.AppendUint64(nil, uint64(i))}, nil)
				for got := <-arrived; got != i; got = <-arrived {
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			close(stop)
			_ = prod.ProduceSync(ctx, &kgo.Record{Value: []byte("wake")}) // end the last poll
			wg.Wait()
			slices.Sort(lat)
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			b.ReportMetric(us(lat[len(lat)/2]), "p50-µs")
			b.ReportMetric(us(lat[len(lat)*99/100]), "p99-µs")
		})
	}
}

// BenchmarkIdleLongPoll has consumers long-poll an empty partition with a
// max wait of 100ms and of 1s: every fetch waits and expires. A broker whose
// waiting costs nothing costs the same per fetch whatever the wait. ns/op is
// per expired fetch, and broker-cpu-µs/fetch is what each costs the broker.
func BenchmarkIdleLongPoll(b *testing.B) {
	const consumers = 200
	for _, wait := range []time.Duration{100 * time.Millisecond, time.Second} {
		b.Run("wait="+wait.String(), func(b *testing.B) { idleLongPoll(b, consumers, wait) })
	}
}

func idleLongPoll(b *testing.B, consumers int, wait time.Duration) {
	for _, kind := range brokers {
		b.Run("broker="+kind, func(b *testing.B) {
			br := startBroker(b, kind)
			ctx := context.Background()
			admin, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.DefaultProduceTopic("idle"), kgo.AllowAutoTopicCreation())
			if err != nil {
				b.Fatal(err)
			}
			defer admin.Close()
			if err := admin.ProduceSync(ctx, &kgo.Record{Value: []byte("create")}).FirstErr(); err != nil {
				b.Fatal(err)
			}

			var fetches atomic.Int64
			hook := fetchCounter{&fetches}
			var clients []*kgo.Client
			for range consumers {
				cl, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.ConsumeTopics("idle"),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(wait), kgo.WithHooks(hook))
				if err != nil {
					b.Fatal(err)
				}
				clients = append(clients, cl)
			}
			pollCtx, cancel := context.WithCancel(ctx)
			var wg sync.WaitGroup
			for _, cl := range clients {
				wg.Go(func() {
					for pollCtx.Err() == nil {
						cl.PollFetches(pollCtx)
					}
				})
			}
			for fetches.Load() < int64(consumers) { // every consumer polling
				time.Sleep(10 * time.Millisecond)
			}
			f0, cpu0 := fetches.Load(), br.cpu(b)
			b.ResetTimer()
			for fetches.Load()-f0 < int64(b.N) {
				time.Sleep(10 * time.Millisecond)
			}
			b.StopTimer()
			n, cpu := fetches.Load()-f0, br.cpu(b)-cpu0
			cancel()
			wg.Wait()
			for _, cl := range clients {
				cl.Close()
			}
			b.ReportMetric(float64(cpu)/float64(n)/1e3, "broker-cpu-µs/fetch")
		})
	}
}

// fetchCounter counts the fetch requests the consumers' clients write.
type fetchCounter struct{ n *atomic.Int64 }

func (h fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		h.n.Add(1)
	}
}
