package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// BenchmarkProduceValidation measures what validating a client batch's
// records (records.go) costs the produce path: Partition.Append on an
// in-memory log, with validation and without, for a 16 KiB batch of 100
// records as franz-go sends it, uncompressed and with each codec. The
// difference between validate=on and validate=off is the validation.
// retention.bytes keeps the log at 1 MiB, so that memory stays flat.
func BenchmarkProduceValidation(b *testing.B) {
	vals := make([]string, 100)
	for i := range vals {
		vals[i] = fmt.Sprintf("record %d: %0150d", i, i)
	}
	codecs := []struct {
		name  string
		codec int16
	}{{"none", 0}, {"gzip", codecGzip}, {"snappy", codecSnappy}, {"lz4", codecLz4}, {"zstd", codecZstd}}
	for _, c := range codecs {
		raw := batchtest.Values(1000, vals...)
		if c.codec != 0 {
			raw = batchtest.CompressedValues(c.codec, 1000, vals...)
		}
		for _, validate := range []bool{true, false} {
			b.Run(fmt.Sprintf("codec=%s/validate=%v", c.name, map[bool]string{true: "on", false: "off"}[validate]), func(b *testing.B) {
				s, err := New(WithRetentionCheckInterval(0))
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = s.Close() }()
				s.cfg.skipRecords = !validate
				t, err := s.CreateTopic("bench", 1, TopicConfig{Retention: -1, RetentionBytes: 1 << 20, MaxMessageBytes: 1 << 20})
				if err != nil {
					b.Fatal(err)
				}
				p := t.Partitions[0]
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					// Append keeps its bytes: each is a request's own,
					// as the broker reads every request into a body of
					// its own (the copy place made before).
					if _, err := p.Append(bytes.Clone(raw)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkValidateRecords measures the record walk alone (validateRecords,
// records.go) on the batch a kgo producer sends under load: 5,400 records
// of a 100-byte value, the request BenchmarkProduceAcksAll of test/kfakecmp
// makes, uncompressed and snappy-compressed as kgo does by default.
// ns/record is the walk's cost per record, inflating included.
func BenchmarkValidateRecords(b *testing.B) {
	const n = 5400
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i / 100), Value: make([]byte, 100)}
	}
	records := batchtest.Records(recs...)
	for _, c := range []struct {
		name  string
		codec int16
	}{{"none", 0}, {"snappy", codecSnappy}} {
		b.Run("codec="+c.name, func(b *testing.B) {
			h := batchtest.Header(n, 1000)
			h.MaxTimestamp = 1000 + (n-1)/100
			h.Records = records
			if c.codec != 0 {
				h.Attributes = c.codec
				h.Records = batchtest.Compress(c.codec, records)
			}
			batch, err := ParseBatch(batchtest.Encode(h))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := validateRecords(batch, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
		})
	}
}

// BenchmarkClean measures the log cleaner's throughput, as Kafka's
// cleaner reports it: bytes of dirty log cleaned a second. Each iteration
// cleans a fresh in-memory partition of 200 batches of 100 records (16
// KiB each, about 3 MiB uncompressed), over 1,000 keys each written 20
// times, so that a pass keeps a twentieth; uncompressed, and with zstd
// (decoded and compressed again), where the bytes are the compressed
// ones the log holds. The partition is built with the timer stopped.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []struct {
		name  string
		codec int16
	}{{"none", 0}, {"zstd", codecZstd}} {
		b.Run("codec="+codec.name, func(b *testing.B) {
			// Values of random letters, so that zstd compresses them
			// about as it does text, not a run of zeros.
			rng := rand.New(rand.NewPCG(1, 2))
			batches := make([][]byte, 200)
			for i := range batches {
				recs := make([]kmsg.Record, 100)
				for j := range recs {
					n := i*100 + j
					value := make([]byte, 150)
					for k := range value {
						value[k] = 'a' + byte(rng.IntN(26))
					}
					recs[j] = kmsg.Record{OffsetDelta: int32(j), Key: fmt.Appendf(nil, "key-%04d", n%1000), Value: value}
				}
				h := batchtest.Header(len(recs), 1000)
				h.Records = batchtest.Records(recs...)
				if codec.codec != 0 {
					h.Attributes = codec.codec
					h.Records = batchtest.Compress(codec.codec, h.Records)
				}
				batches[i] = batchtest.Encode(h)
			}
			active := batchtest.Encode(func() kmsg.RecordBatch {
				h := batchtest.Header(1, 1000)
				h.Records = batchtest.Records(kmsg.Record{Key: []byte("last"), Value: []byte("v")})
				return h
			}())
			s, err := New(WithRetentionCheckInterval(0), WithCleanerInterval(0))
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			cfg := DefaultTopicConfig()
			cfg.Cleanup = CleanupCompact
			var dirty int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				t, err := s.CreateTopic(fmt.Sprintf("bench-%d", i), 1, cfg)
				if err != nil {
					b.Fatal(err)
				}
				p := t.Partitions[0]
				for _, raw := range append(batches, active) {
					if _, err := p.Append(bytes.Clone(raw)); err != nil {
						b.Fatal(err)
					}
				}
				if dirty == 0 {
					size, _ := p.Size()
					dirty = size - int64(len(active))
					b.SetBytes(dirty)
				}
				b.StartTimer()
				st, err := p.Clean(s.cfg.clock.Now())
				if err != nil || st.BytesCleaned == 0 {
					b.Fatalf("cleaned %+v: %v", st, err)
				}
				b.StopTimer()
				if _, err := s.DeleteTopic(t.Name); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
