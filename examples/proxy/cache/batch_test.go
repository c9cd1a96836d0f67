package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseHeader(t *testing.T) {
	b := batchOf(40, attrTxn, "a", "b", "c")
	old := batchOf(0, 0, "x")
	old[magicPos] = 1
	short := batchOf(0, 0, "x")
	short[11] = 10 // a length too small for a header

	tests := []struct {
		name    string
		in      []byte
		want    Header
		ok      bool
		wantErr error
	}{
		{name: "whole batch", in: b, want: Header{Base: 40, Last: 42, Transactional: true, Size: len(b)}, ok: true},
		{name: "control batch counts as transactional", in: batchOf(7, attrControl, "m"), want: Header{Base: 7, Last: 7, Transactional: true, Size: len(batchOf(7, attrControl, "m"))}, ok: true},
		{name: "partial header", in: b[:10]},
		{name: "partial body", in: b[:len(b)-1]},
		{name: "old message format", in: old, wantErr: ErrMessageFormat},
		{name: "length too small", in: short, wantErr: ErrCorruptBatch},
		{name: "empty", in: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok, err := ParseHeader(tt.in)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.ok, ok, "whole batch or not")
			assert.Equal(t, tt.want, h, "header")
		})
	}
}

func TestSplit(t *testing.T) {
	a, b, c := batchOf(0, 0, "a", "b"), batchOf(2, 0, "c"), batchOf(10, 0, "d") // a gap from 3 to 9: compaction
	t.Run("whole batches and a partial tail", func(t *testing.T) {
		in := join(a, b, c[:20])
		var bases []int64
		n, err := Split(in, func(h Header) { bases = append(bases, h.Base) })
		require.NoError(t, err)
		assert.Equal(t, []int64{0, 2}, bases, "the partial batch is left out")
		assert.Equal(t, len(a)+len(b), n, "bytes of whole batches")
	})
	t.Run("gaps between batches are fine", func(t *testing.T) {
		n, err := Split(join(a, c), func(Header) {})
		require.NoError(t, err)
		assert.Equal(t, len(a)+len(c), n)
	})
	t.Run("a batch inside the one before is corrupt", func(t *testing.T) {
		_, err := Split(join(a, batchOf(1, 0, "z")), func(Header) {})
		assert.ErrorIs(t, err, ErrCorruptBatch)
	})
}

func TestTrim(t *testing.T) {
	a, b := batchOf(0, 0, "aaaa"), batchOf(1, 0, "bbbb")
	both := join(a, b)
	tests := []struct {
		name   string
		max    int
		minOne bool
		want   []byte
	}{
		{name: "everything fits", max: len(both), want: both},
		{name: "only whole batches", max: len(both) - 1, want: a},
		{name: "first too large without minOne", max: len(a) - 1},
		{name: "first too large with minOne", max: 1, minOne: true, want: a},
		{name: "nothing allowed", max: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, len(tt.want), len(Trim(both, tt.max, tt.minOne)), "bytes kept")
		})
	}
}

// FuzzSplit checks that Split never panics, never reads past its input,
// and that what it accepts parses again batch by batch to the same bytes.
func FuzzSplit(f *testing.F) {
	f.Add(join(batchOf(0, 0, "a"), batchOf(1, attrTxn, "b", "c")))
	f.Add(batchOf(5, 0, "x")[:30])
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		var sizes int
		n, err := Split(in, func(h Header) {
			sizes += h.Size
			if h.Last < h.Base {
				t.Fatalf("last %d before base %d", h.Last, h.Base)
			}
		})
		if n > len(in) || sizes != n {
			t.Fatalf("split %d bytes of %d, batches of %d bytes", n, len(in), sizes)
		}
		if err == nil {
			_ = Trim(in, len(in)/2, true)
		}
	})
}
