package records

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/group"
)

// placed renumbers raw batches to follow each other from next, as a
// partition places them.
func placed(next int64, batches [][]byte) []byte {
	var out []byte
	for _, raw := range batches {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			panic(err)
		}
		b.FirstOffset = next
		next += int64(b.NumRecords)
		out = b.AppendTo(out)
	}
	return out
}

// unplaced is gs without its offsets' positions: a rewrite places the
// same offsets elsewhere.
func unplaced(gs []group.StoredGroup) []group.StoredGroup {
	for _, g := range gs {
		for i := range g.Offsets {
			g.Offsets[i].Position = 0
		}
	}
	return gs
}

// TestRewrite: the live records alone, or after the records they compact,
// or any prefix of them after those, replay to the same groups.
func TestRewrite(t *testing.T) {
	raw := log(
		[]kmsg.Record{Group(typed("g", "consumer")), Offset("g", off("t", 0, 10)), Offset("g", off("t", 1, 20))},
		[]kmsg.Record{Offset("g", off("t", 0, 11)), Offset("g", off("t", 0, 12))},
		[]kmsg.Record{Offset("simple", off("u", 0, 1)), Group(typed("empty", ""))},
		[]kmsg.Record{Group(typed("gone", "consumer")), Offset("gone", off("u", 0, 1))},
		[]kmsg.Record{OffsetTombstone("g", tp("t", 1)), GroupTombstone("gone")},
	)
	var r Replay
	next, err := r.Apply(raw)
	require.NoError(t, err)
	want := r.Groups()
	assert.Equal(t, int64(11), r.Records())
	assert.Equal(t, int64(3), r.Live(), "g's metadata and offset, simple's offset")

	batches := r.Rewrite(t0, 2, 1<<20)
	require.Len(t, batches, 2, "at most 2 records a batch")
	var alone Replay
	_, err = alone.Apply(placed(0, batches))
	require.NoError(t, err)
	assert.Equal(t, unplaced(want), unplaced(alone.Groups()), "the rewrite alone")
	assert.Equal(t, int64(3), alone.Live())
	assert.Equal(t, int64(3), alone.Records())

	for n := range len(batches) + 1 {
		var after Replay
		_, err := after.Apply(append(append([]byte(nil), raw...), placed(next, batches[:n])...))
		require.NoError(t, err)
		assert.Equal(t, unplaced(want), unplaced(after.Groups()), "the log, then %d batches of the rewrite", n)
		assert.Equal(t, int64(3), after.Live(), "a rewrite adds no live record")
	}

	assert.Len(t, r.Rewrite(t0, 1000, 1), 3, "a byte limit below a record: one record a batch")
}
