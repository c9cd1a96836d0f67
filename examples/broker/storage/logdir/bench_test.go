package logdir

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// benchBatch returns a 1 KiB batch of 10 records at base.
func benchBatch(b *testing.B, base int64) *storage.Batch {
	vals := make([]string, 10)
	for i := range vals {
		vals[i] = fmt.Sprintf("%090d", i)
	}
	batch, err := storage.ParseStoredBatch(batchtest.At(base, batchtest.Values(1000, vals...)))
	if err != nil {
		b.Fatal(err)
	}
	return batch
}

// BenchmarkAppend appends 1 KiB batches, without fsync (the default flush
// settings) and with one per append (log.flush.interval.messages=1), on
// the file system of the test's temporary directory.
func BenchmarkAppend(b *testing.B) {
	for _, tt := range []struct {
		name string
		opts []Option
	}{
		{"no fsync", nil},
		{"fsync every append", []Option{WithFlush(1, 0)}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			d, err := Open(b.TempDir(), append([]Option{WithSegmentBytes(64 << 20)}, tt.opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			l, err := d.OpenLog("t", testID, 0)
			if err != nil {
				b.Fatal(err)
			}
			raw := append([]byte(nil), benchBatch(b, 0).Bytes()...)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				// The base offset is outside the checksum: restamp it,
				// as the partition does.
				binary.BigEndian.PutUint64(raw, uint64(i)*10)
				batch, err := storage.ParseStoredBatch(raw)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// writtenBench writes mib MiB of 1 KiB batches to a new log dir and
// closes it.
func writtenBench(b *testing.B, mib int) string {
	path := b.TempDir()
	d, err := Open(path, WithSegmentBytes(16<<20), withSync(func(*os.File) error { return nil }))
	if err != nil {
		b.Fatal(err)
	}
	l, err := d.OpenLog("t", testID, 0)
	if err != nil {
		b.Fatal(err)
	}
	size := len(benchBatch(b, 0).Bytes())
	for i := range mib << 20 / size {
		if err := l.Append(benchBatch(b, int64(i)*10)); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkRecover opens a 64 MiB log of 1 KiB batches: every batch is
// read and checked (the page cache is warm, as after a process restart).
func BenchmarkRecover(b *testing.B) {
	path := writtenBench(b, 64)
	b.SetBytes(64 << 20)
	b.ReportAllocs()
	for b.Loop() {
		d, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.OpenLog("t", testID, 0); err != nil {
			b.Fatal(err)
		}
		if err := d.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead reads 64 KiB from offsets spread over a 64 MiB log, as
// consumers fetching: an index lookup, a short scan, one pread.
func BenchmarkRead(b *testing.B) {
	path := writtenBench(b, 64)
	d, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	l, err := d.OpenLog("t", testID, 0)
	if err != nil {
		b.Fatal(err)
	}
	end := l.Bounds().End
	b.SetBytes(64 << 10)
	b.ReportAllocs()
	buf := make([]byte, 0, 128<<10)
	for i := 0; b.Loop(); i++ {
		offset := int64(i*7919*10) % end
		if _, err := l.Read(buf[:0], offset, end, 64<<10, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendWhileCleaning measures what the log cleaner costs a
// producer: the latency of Partition.Append of a 1.5 KiB batch (10 records
// over 1,000 keys) to a compacted partition in a log dir of 64 KiB
// segments, with nothing else running, and with the store's cleaner
// passing over that very partition without a pause (a worse case than its
// schedule). It reports the 50th and 99th percentiles, in microseconds.
func BenchmarkAppendWhileCleaning(b *testing.B) {
	for _, cleaning := range []bool{false, true} {
		b.Run(fmt.Sprintf("cleaning=%v", cleaning), func(b *testing.B) {
			d, err := Open(b.TempDir(), WithSegmentBytes(64<<10))
			if err != nil {
				b.Fatal(err)
			}
			s, err := storage.New(storage.WithLogOpener(d.OpenLog), storage.WithCatalog(d),
				storage.WithRetentionCheckInterval(0), storage.WithCleanerInterval(0))
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = d.Close() }()
			defer func() { _ = s.Close() }()
			cfg := s.TopicDefaults()
			cfg.Cleanup, cfg.DirtyRatio = storage.CleanupCompact, 0
			tp, err := s.CreateTopic("c", 1, cfg)
			if err != nil {
				b.Fatal(err)
			}
			p := tp.Partitions[0]
			batch := func(i int) []byte {
				recs := make([]kmsg.Record, 10)
				for j := range recs {
					recs[j] = kmsg.Record{OffsetDelta: int32(j), Key: fmt.Appendf(nil, "key-%03d", (i*10+j)%1000),
						Value: fmt.Appendf(nil, "%0140d", i)}
				}
				h := batchtest.Header(len(recs), time.Now().UnixMilli())
				h.Records = batchtest.Records(recs...)
				return batchtest.Encode(h)
			}
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for cleaning {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.Clean(); err != nil {
						b.Error(err)
						return
					}
				}
			}()
			var lat []time.Duration
			for i := 0; b.Loop(); i++ {
				raw := batch(i)
				start := time.Now()
				if _, err := p.Append(raw); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			close(stop)
			<-done
			slices.Sort(lat)
			at := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(at(0.5), "p50-µs")
			b.ReportMetric(at(0.99), "p99-µs")
		})
	}
}
