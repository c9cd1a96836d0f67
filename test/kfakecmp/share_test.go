package kfakecmp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share groups (KIP-932): both brokers serve them with their defaults, and
// both start a share group at the high watermark (share.auto.offset.reset
// latest), so each benchmark first sets the group's
// share.auto.offset.reset to earliest with IncrementalAlterConfigs on the
// GROUP resource (kafka-configs --entity-type groups does the same):
// records already in the topic are then the group's.

// BenchmarkShareConsume has a share group of one or of three kgo share
// consumers (consumers=1, consumers=3) read a partition pre-filled with
// b.N 100-byte records, each record accepted as it is polled; ns/op is per
// record. The consumers join the group with the topic paused and are
// resumed once every one holds the partition (three members share it), so
// that the timing is the share path alone: ShareFetch acquiring records,
// their acknowledgements riding on the next ShareFetch or sent by
// ShareAcknowledge, until every record has arrived and every
// acknowledgement has been answered (the consumers' max wait is
// shareMaxWait). The group's start offset is then checked to have passed
// every record: all were accepted.
func BenchmarkShareConsume(b *testing.B) {
	for _, consumers := range []int{1, 3} {
		b.Run(fmt.Sprintf("consumers=%d", consumers), func(b *testing.B) {
			for _, kind := range brokers {
				b.Run("broker="+kind, func(b *testing.B) {
					shareConsume(b, startBroker(b, kind), consumers)
				})
			}
		})
	}
}

// shareMaxWait is the share consumers' max wait in BenchmarkShareConsume.
// While records are left, a share fetch is answered at once whatever its
// max wait; once the partition is drained, the last acknowledgements ride
// on a share fetch that waits for records that never come, until its max
// wait (kgo's default of 5s, capped at 500ms when acknowledgements ride
// along): that wait would add a fixed half-second to every run, whatever
// the broker.
const shareMaxWait = 10 * time.Millisecond

func shareConsume(b *testing.B, br *child, consumers int) {
	const topic, group = "share", "bench-share"
	ctx := context.Background()
	prod, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(1<<16))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	// An empty topic, so that the b.N records are offsets 0 to b.N-1.
	createTopic(b, ctx, prod, topic)
	shareEarliest(b, ctx, prod, group)

	n := b.N
	seen := make([]atomic.Bool, n) // by offset: a record redelivered counts once
	var got atomic.Int64
	all := make(chan struct{})
	var failure atomic.Pointer[error]
	fail := func(err error) { failure.CompareAndSwap(nil, &err) }
	var clients []*kgo.Client
	for range consumers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
			kgo.FetchMaxWait(shareMaxWait),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				if err := rs.Error(); err != nil {
					fail(fmt.Errorf("acknowledgement: %w", err))
				}
			}))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		// Paused before its first share fetch, which waits for the
		// assignment, a heartbeat's round trip away (were one sent
		// first, the records it acquired would be polled once resumed).
		cl.PauseFetchTopics(topic)
		clients = append(clients, cl)
	}
	waitShareMembers(b, ctx, prod, group, consumers)

	var failed atomic.Int64
	value := make([]byte, 100)
	for range n {
		prod.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d records of the pre-fill failed", f)
	}

	pollCtx, stopPolling := context.WithCancel(ctx)
	defer stopPolling()
	var wg sync.WaitGroup
	u0 := br.usage(b)
	b.ResetTimer()
	for _, cl := range clients {
		cl.ResumeFetchTopics(topic)
		wg.Go(func() {
			for pollCtx.Err() == nil {
				fs := cl.PollFetches(pollCtx)
				fs.EachError(func(t string, p int32, err error) {
					if !errors.Is(err, context.Canceled) {
						fail(fmt.Errorf("fetch %s/%d: %w", t, p, err))
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					r.Ack(kgo.AckAccept)
					if r.Offset < 0 || r.Offset >= int64(n) {
						fail(fmt.Errorf("offset %d of a topic of %d records", r.Offset, n))
						return
					}
					if !seen[r.Offset].Swap(true) && got.Add(1) == int64(n) {
						close(all)
					}
				})
			}
		})
	}
	// Every record arrived, or the consumers stopped making progress.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last, since := int64(-1), time.Now()
wait:
	for {
		select {
		case <-all:
			break wait
		case <-tick.C:
		}
		if p := failure.Load(); p != nil {
			b.Fatal(*p)
		}
		if g := got.Load(); g != last {
			last, since = g, time.Now()
		} else if time.Since(since) > 30*time.Second {
			b.Fatalf("%d of %d records received, none for 30s", g, n)
		}
	}
	// Every acknowledgement sent and answered.
	flushCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, cl := range clients {
		if err := cl.FlushAcks(flushCtx); err != nil {
			b.Fatalf("flushing acknowledgements: %v", err)
		}
	}
	b.StopTimer()
	u := br.usage(b).sub(u0)
	stopPolling()
	wg.Wait()
	if p := failure.Load(); p != nil {
		b.Fatal(*p)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(u.cpu)/float64(n), "broker-cpu-ns/record")
	b.ReportMetric(float64(u.alloc)/float64(n), "broker-B/record")
	waitShareStart(b, ctx, prod, group, topic, int64(n))
}

// BenchmarkShareEndToEndLatency is BenchmarkEndToEndLatency with a share
// consumer: one producer produces one record at a time (acks=all) to a
// partition one kgo share consumer long-polls (max wait 5s), accepting
// each record as it arrives (the acknowledgement rides on its next
// ShareFetch), and each record is timed from its produce call to its
// arrival at the consumer.
func BenchmarkShareEndToEndLatency(b *testing.B) {
	const topic, group = "share-e2e", "bench-share-e2e"
	for _, kind := range brokers {
		b.Run("broker="+kind, func(b *testing.B) {
			br := startBroker(b, kind)
			ctx := context.Background()
			prod, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.DefaultProduceTopic(topic),
				kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation(),
				kgo.ProducerLinger(0)) // the client's linger would hide the brokers' latency
			if err != nil {
				b.Fatal(err)
			}
			defer prod.Close()
			if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("create")}).FirstErr(); err != nil {
				b.Fatal(err)
			}
			// Earliest, so that the warm-up record below is the
			// consumer's even if it is produced before the consumer's
			// first fetch reaches the partition.
			shareEarliest(b, ctx, prod, group)
			cons, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
				kgo.FetchMaxWait(5*time.Second))
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Close()

			// The consumer accepts every record and passes on the
			// sequence number a record carries.
			arrived := make(chan int, 1)
			pollCtx, stopPolling := context.WithCancel(ctx)
			defer stopPolling()
			var wg sync.WaitGroup
			wg.Go(func() {
				for pollCtx.Err() == nil {
					cons.PollFetches(pollCtx).EachRecord(func(r *kgo.Record) {
						r.Ack(kgo.AckAccept)
						if len(r.Value) != 8 {
							return
						}
						select {
						case arrived <- int(binary.BigEndian.Uint64(r.Value)):
						case <-pollCtx.Done():
						}
					})
				}
			})
			// Let the consumer join and its first share fetch reach the
			// broker and wait.
			warm := &kgo.Record{Value: binary.BigEndian.AppendUint64(nil, 1<<62)}
			if err := prod.ProduceSync(ctx, warm).FirstErr(); err != nil {
				b.Fatal(err)
			}
			<-arrived

			lat := make([]time.Duration, 0, b.N)
			u0 := br.usage(b)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				prod.Produce(ctx, &kgo.Record{Value: binary.BigEndian.AppendUint64(nil, uint64(i))}, nil)
				for got := <-arrived; got != i; got = <-arrived {
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			// The broker's CPU and heap allocations per record: a
			// produce, a share fetch answering it and one acknowledging
			// it; the collector's runs, which allocations pace, are in
			// the tail.
			u := br.usage(b).sub(u0)
			b.ReportMetric(float64(u.cpu)/float64(b.N), "broker-cpu-ns/record")
			b.ReportMetric(float64(u.alloc)/float64(b.N), "broker-B/record")
			stopPolling() // ends the last poll
			wg.Wait()
			slices.Sort(lat)
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			b.ReportMetric(us(lat[len(lat)/2]), "p50-µs")
			b.ReportMetric(us(lat[len(lat)*99/100]), "p99-µs")
		})
	}
}

// createTopic creates topic with one partition and the broker's default
// replication factor.
func createTopic(b *testing.B, ctx context.Context, cl *kgo.Client, topic string) {
	b.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, -1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		b.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		b.Fatalf("creating %s: %+v", topic, resp.Topics)
	}
}

// shareEarliest sets group's share.auto.offset.reset to earliest (a GROUP
// config, KIP-932), before any of its consumers fetches: a share
// partition's start is decided when the group first fetches it.
func shareEarliest(b *testing.B, ctx context.Context, cl *kgo.Client, group string) {
	b.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		b.Fatal(err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		b.Fatalf("setting share.auto.offset.reset: %+v", resp.Resources)
	}
}

// waitShareMembers waits until group has members members, each assigned a
// partition.
func waitShareMembers(b *testing.B, ctx context.Context, cl *kgo.Client, group string, members int) {
	b.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 {
			last = fmt.Sprint(resp, err)
			continue
		}
		g := resp.Groups[0]
		last = fmt.Sprintf("%+v", g)
		assigned := 0
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) > 0 {
				assigned++
			}
		}
		if g.ErrorCode == 0 && assigned == members {
			return
		}
	}
	b.Fatalf("share group %s without %d assigned members: %s", group, members, last)
}

// waitShareStart waits until group's share-partition start offset on
// topic's partition 0 is at end: every record before it was accepted.
func waitShareStart(b *testing.B, ctx context.Context, cl *kgo.Client, group, topic string, end int64) {
	b.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
			last = fmt.Sprint(resp, err)
			continue
		}
		p := resp.Groups[0].Topics[0].Partitions[0]
		last = fmt.Sprintf("%+v", p)
		if p.ErrorCode == 0 && p.StartOffset == end {
			return
		}
	}
	b.Fatalf("share group %s's start offset on %s is not %d: %s", group, topic, end, last)
}
