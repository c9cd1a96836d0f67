package logdir

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// TestStagedReplace: a cleaned segment is written aside, its files under
// temporary names, while the log goes on; its Commit swaps it in, unless
// the segment went meanwhile (retention here), when nothing of it is
// left behind.
func TestStagedReplace(t *testing.T) {
	path, _ := written(t, 20) // segments at 0, 5, 10, 15
	l, _ := reopenQuiet(t, path)
	var segs []storage.Segment
	require.NoError(t, l.Segments(func(s storage.Segment) bool { segs = append(segs, s); return true }))
	require.Len(t, segs, 4)

	gone, err := l.StageReplace(segs[0], []*storage.Batch{stored(t, 4, 1, 1000)})
	require.NoError(t, err)
	require.NoError(t, l.DropBefore(5))
	assert.ErrorIs(t, gone.Commit(), storage.ErrSegmentChanged)

	kept, err := l.StageReplace(segs[1], []*storage.Batch{stored(t, 7, 1, 1000), stored(t, 9, 1, 1000)})
	require.NoError(t, err)
	require.NoError(t, l.Append(stored(t, 20, 1, 1000)), "appends go on while a segment is staged")
	require.NoError(t, kept.Commit())
	assert.Equal(t, []int64{7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, offsets(t, readAll(t, l)))
	for _, name := range files(t, l.dir) {
		assert.False(t, strings.HasSuffix(name, ".tmp"), "%s is left", name)
	}

	_, err = l.StageReplace(segs[2], []*storage.Batch{stored(t, 12, 1, 1000)})
	assert.Error(t, err, "a cleaned segment must end where it did")
	abort, err := l.StageReplace(segs[2], []*storage.Batch{stored(t, 14, 1, 1000)})
	require.NoError(t, err)
	abort.Abort()
	for _, name := range files(t, l.dir) {
		assert.False(t, strings.HasSuffix(name, ".tmp"), "%s is left after Abort", name)
	}
	assert.Equal(t, []int64{7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, offsets(t, readAll(t, l)), "nothing changed")
}
