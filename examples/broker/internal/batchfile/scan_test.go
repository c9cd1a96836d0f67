package batchfile

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// file returns three batches written from offset 10, as a log writes them,
// and where each starts.
func file() ([]byte, []int64) {
	var out []byte
	var pos []int64
	next := int64(10)
	for _, vals := range [][]string{{"a", "b"}, {"ccc"}, {"d", "e", "f"}} {
		pos = append(pos, int64(len(out)))
		out = append(out, batchtest.At(next, batchtest.Values(1, vals...))...)
		next += int64(len(vals))
	}
	return out, pos
}

// scan scans data from 0 expecting offset 10, and returns the positions of
// the batches read.
func scan(data []byte) ([]int64, *Tear, error) {
	var got []int64
	tear, err := Scan(bytes.NewReader(data), int64(len(data)), 0, 10, func(b Batch) error {
		got = append(got, b.Pos)
		return nil
	})
	return got, tear, err
}

func TestScanWholeFile(t *testing.T) {
	data, pos := file()
	got, tear, err := scan(data)
	require.NoError(t, err)
	assert.Nil(t, tear)
	assert.Equal(t, pos, got)

	var offsets []int64
	_, err = Scan(bytes.NewReader(data), int64(len(data)), pos[1], 12, func(b Batch) error {
		offsets = append(offsets, b.Info.BaseOffset, b.Info.LastOffset)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int64{12, 12, 13, 15}, offsets, "from a position inside the file")

	stop := errors.New("stop")
	_, err = Scan(bytes.NewReader(data), int64(len(data)), 0, 10, func(Batch) error { return stop })
	assert.ErrorIs(t, err, stop, "fn's error is returned")
}

// TestScanTornTailAtEveryLength cuts the file at every length: the whole
// batches before the cut are read, and the rest is a torn tail.
func TestScanTornTailAtEveryLength(t *testing.T) {
	data, pos := file()
	for n := 0; n <= len(data); n++ {
		got, tear, err := scan(data[:n])
		require.NoError(t, err, "cut at %d", n)
		var want []int64
		for i, p := range pos {
			end := int64(len(data))
			if i+1 < len(pos) {
				end = pos[i+1]
			}
			if end <= int64(n) {
				want = append(want, p)
			}
		}
		assert.Equal(t, want, got, "cut at %d", n)
		whole := int64(0)
		if len(want) > 0 {
			whole = pos[len(want)-1] + int64(len(batchAt(data, pos, len(want)-1)))
		}
		if whole == int64(n) {
			assert.Nil(t, tear, "cut at %d: on a batch boundary", n)
		} else {
			require.NotNil(t, tear, "cut at %d", n)
			assert.Equal(t, whole, tear.Pos, "cut at %d", n)
			assert.ErrorIs(t, tear.Reason, storage.ErrCorruptBatch)
		}
	}
}

func batchAt(data []byte, pos []int64, i int) []byte {
	if i+1 < len(pos) {
		return data[pos[i]:pos[i+1]]
	}
	return data[pos[i]:]
}

func TestScanBadBatches(t *testing.T) {
	data, pos := file()
	tests := []struct {
		name     string
		edit     func([]byte) []byte
		tearAt   int64 // -1: corruption, an error
		errMatch string
	}{
		{"a flipped bit in the last batch", func(b []byte) []byte { b[len(b)-1] ^= 0x10; return b }, pos[2], ""},
		{"a flipped bit in the last header", func(b []byte) []byte { b[pos[2]+20] ^= 1; return b }, pos[2], ""},
		{"zeros after the last batch", func(b []byte) []byte { return append(b, make([]byte, 5000)...) }, int64(len(data)), ""},
		{"garbage after the last batch", func(b []byte) []byte { return append(b, bytes.Repeat([]byte{2, 0xff}, 100)...) }, int64(len(data)), ""},
		{"a flipped bit in the middle batch", func(b []byte) []byte { b[pos[2]-1] ^= 1; return b }, -1, fmt.Sprintf("position %d (offset 12)", pos[1])},
		{"a middle batch's length runs past the file", func(b []byte) []byte { b[pos[1]+8] = 0x7f; return b }, -1, fmt.Sprintf("whole batch follows at position %d", pos[2])},
		{"a middle batch at an offset before the one due", func(b []byte) []byte { b[pos[1]+7] = 3; return b }, -1, "base offset 3 where at least 12 was due"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.edit(append([]byte(nil), data...))
			_, tear, err := scan(b)
			if tt.tearAt < 0 {
				assert.ErrorIs(t, err, storage.ErrCorruptBatch)
				assert.ErrorContains(t, err, tt.errMatch)
				assert.Nil(t, tear)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, tear)
			assert.Equal(t, tt.tearAt, tear.Pos)
		})
	}
}
