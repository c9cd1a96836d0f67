package test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// testRecords returns n records whose keys, values and headers are random
// bytes (value i starts with i, so the records can be matched up).
func testRecords(n int, seed uint64) []*kgo.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	blob := func(max int) []byte {
		b := make([]byte, rng.IntN(max))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		r := &kgo.Record{Key: blob(32), Value: append([]byte(fmt.Sprintf("%08d|", i)), blob(2000)...)}
		for range rng.IntN(3) {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: fmt.Sprintf("h%d", rng.IntN(100)), Value: blob(16)})
		}
		if i%10 == 0 {
			r.Key = nil // a null key
		}
		recs[i] = r
	}
	return recs
}

// consumeAll reads topic from its start until it has n records.
func consumeAll(t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "consumed %d of %d records", len(got), n)
		fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetching %s-%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// sameRecord reports whether a consumed record is, byte for byte, the one
// produced.
func sameRecord(want, got *kgo.Record) bool {
	if !bytes.Equal(want.Key, got.Key) || !bytes.Equal(want.Value, got.Value) || len(want.Headers) != len(got.Headers) {
		return false
	}
	for i := range want.Headers {
		if want.Headers[i].Key != got.Headers[i].Key || !bytes.Equal(want.Headers[i].Value, got.Headers[i].Value) {
			return false
		}
	}
	return true
}

func TestProduceThenConsumeEverything(t *testing.T) {
	tests := []struct {
		name string
		opts []kgo.Opt
	}{
		{"acks 0", []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}},
		{"acks 1", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
		{"acks all", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite()}},
		{"acks all, idempotent", nil}, // kgo's default
		{"idempotent, uncompressed", []kgo.Opt{kgo.ProducerBatchCompression(kgo.NoCompression())}},
		{"idempotent, zstd", []kgo.Opt{kgo.ProducerBatchCompression(kgo.ZstdCompression())}},
	}
	srv := startBroker(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			topic := fmt.Sprintf("round-trip-%d", i)
			admin := newClient(t, srv)
			createTopic(t, admin, topic, 3)

			producer := newClient(t, srv, append([]kgo.Opt{kgo.DefaultProduceTopic(topic)}, tt.opts...)...)
			want := testRecords(500, uint64(i))
			var (
				mu    sync.Mutex
				acked int
			)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for _, r := range want {
				producer.Produce(ctx, r, func(r *kgo.Record, err error) {
					assert.NoError(t, err)
					mu.Lock()
					acked++
					mu.Unlock()
				})
			}
			require.NoError(t, producer.Flush(ctx))
			assert.Equal(t, len(want), acked)

			consumer := newClient(t, srv, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			got := consumeAll(t, consumer, len(want))
			require.Len(t, got, len(want), "every record, once")

			// Records were produced in index order; each partition must
			// give back its share in that order, each record intact.
			byIndex := make(map[string]*kgo.Record, len(want))
			for _, r := range want {
				byIndex[string(r.Value[:9])] = r
			}
			lastIndex := map[int32]string{}
			lastOffset := map[int32]int64{}
			for _, r := range got {
				idx := string(r.Value[:9])
				w, ok := byIndex[idx]
				require.True(t, ok, "a record that was never produced: %q", idx)
				assert.True(t, sameRecord(w, r), "record %s differs", idx)
				delete(byIndex, idx)
				if prev, ok := lastIndex[r.Partition]; ok {
					assert.Less(t, prev, idx, "partition %d in produce order", r.Partition)
					assert.Equal(t, lastOffset[r.Partition]+1, r.Offset, "partition %d: consecutive offsets", r.Partition)
				}
				lastIndex[r.Partition], lastOffset[r.Partition] = idx, r.Offset
			}
			assert.Empty(t, byIndex)
			assert.Len(t, lastIndex, 3, "the records spread over the partitions")
		})
	}
}

func TestAutoCreatedTopic(t *testing.T) {
	srv := startBroker(t, func(c *server.Config) { c.NumPartitions = 2 })
	producer := newClient(t, srv, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("auto"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")})
	require.NoError(t, res.FirstErr())

	consumer := newClient(t, srv, kgo.ConsumeTopics("auto"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeAll(t, consumer, 1)
	assert.Equal(t, "hello", string(got[0].Value))
}
