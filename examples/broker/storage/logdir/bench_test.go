package logdir

import (
	"encoding/binary"
	"fmt"
	"os"
	"testing"

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
