package kfakecmp

import (
	"bufio"
	"context"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordsPerBatch is how many 100-byte records a raw produce request holds.
const recordsPerBatch = 100

// batch100 encodes one v2 record batch of n 100-byte records with kmsg,
// CRC included, not idempotent.
func batch100(n int) []byte {
	value := make([]byte, 100)
	var recs []byte
	for i := range n {
		r := kmsg.Record{OffsetDelta: int32(i), Value: value}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the body after a one-byte zero length
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(n - 1), NumRecords: int32(n),
		FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: recs}
	b.Length = int32(49 + len(recs))
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(raw[:0])
}

// BenchmarkProduceAcksAllRaw is the broker-bound counterpart of
// BenchmarkProduceAcksAll: the batch is encoded once and the same produce
// request (acks=all, one partition, 100 records of 100 bytes) is pipelined
// on one connection, up to 32 in flight, as a load generator such as
// kafka-producer-perf-test does, so the client's per-record work does not
// hide the broker's. ns/op is per record.
func BenchmarkProduceAcksAllRaw(b *testing.B) {
	for _, kind := range brokers {
		b.Run("broker="+kind, func(b *testing.B) {
			br := startBroker(b, kind)
			ctx := context.Background()
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.addr), kgo.DefaultProduceTopic("raw"), kgo.AllowAutoTopicCreation())
			if err != nil {
				b.Fatal(err)
			}
			err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("create")}).FirstErr()
			cl.Close()
			if err != nil {
				b.Fatal(err)
			}

			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(7)
			req.Acks, req.TimeoutMillis = -1, 30_000
			req.Topics = []kmsg.ProduceRequestTopic{{Topic: "raw", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch100(recordsPerBatch)}}}}
			frame := []byte{0, 0, 0, 0, 0, byte(kmsg.Produce), 0, 7, 0, 0, 0, 0, 0xff, 0xff} // size, key, version, correlation, null client id
			frame = req.AppendTo(frame)
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))

			nc, err := net.Dial("tcp", br.addr)
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			batches := (b.N + recordsPerBatch - 1) / recordsPerBatch
			window := make(chan struct{}, 32)
			var failed atomic.Int64
			done := make(chan error, 1)
			u0 := br.usage(b)
			b.ResetTimer()
			go func() { // the answers, in order
				br := bufio.NewReader(nc)
				var size [4]byte
				for range batches {
					if _, err := io.ReadFull(br, size[:]); err != nil {
						done <- err
						return
					}
					body := make([]byte, binary.BigEndian.Uint32(size[:]))
					if _, err := io.ReadFull(br, body); err != nil {
						done <- err
						return
					}
					resp := kmsg.NewPtrProduceResponse()
					resp.SetVersion(7)
					if err := resp.ReadFrom(body[4:]); err != nil {
						done <- err
						return
					}
					if resp.Topics[0].Partitions[0].ErrorCode != 0 {
						failed.Add(1)
					}
					<-window
				}
				done <- nil
			}()
			bw := bufio.NewWriter(nc)
			for i := range batches {
				window <- struct{}{}
				binary.BigEndian.PutUint32(frame[8:], uint32(i))
				if _, err := bw.Write(frame); err != nil {
					b.Fatal(err)
				}
				if len(window) == cap(window) || i == batches-1 {
					if err := bw.Flush(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d produce requests failed", n)
			}
			records := batches * recordsPerBatch
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
			u := br.usage(b).sub(u0)
			b.ReportMetric(float64(u.cpu)/float64(records), "broker-cpu-ns/record")
			b.ReportMetric(float64(u.alloc)/float64(records), "broker-B/record")
		})
	}
}
