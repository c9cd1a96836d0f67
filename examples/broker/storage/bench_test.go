package storage

import (
	"bytes"
	"fmt"
	"testing"

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
