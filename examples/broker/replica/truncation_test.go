package replica

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTruncationPoint: where a follower cuts its log from its leader's
// answer to OffsetForLeaderEpoch, as Kafka's AbstractFetcherThread.
func TestTruncationPoint(t *testing.T) {
	// The follower's epochs: 0 from 0, 2 from 10, 4 from 20; log end 30.
	local := func(e int32) (int32, int64) {
		switch {
		case e < 0:
			return -1, -1
		case e < 2:
			return 0, 10
		case e < 4:
			return 2, 20
		}
		return 4, 30
	}
	for _, tc := range []struct {
		name  string
		epoch int32
		end   int64
		to    int64
		done  bool
	}{
		{"the leader holds the follower's epoch, ending earlier (KIP-101)", 4, 25, 25, true},
		{"the leader holds it, ending later: nothing to cut", 4, 40, 30, true},
		{"the leader's epoch is one the follower has, ending earlier (KIP-279)", 2, 15, 15, true},
		{"the leader's epoch is one the follower has, ending later", 2, 22, 20, true},
		{"the leader's epoch the follower never had: cut past its epochs below, ask again", 3, 22, 20, false},
		{"the leader's epoch below the follower's first", 0, 5, 5, true},
		{"a leader without epochs: its end", -1, 12, 12, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, done := truncationPoint(tc.epoch, tc.end, local)
			assert.Equal(t, tc.to, to, "where")
			assert.Equal(t, tc.done, done, "done")
		})
	}
	to, done := truncationPoint(1, 8, func(int32) (int32, int64) { return -1, -1 })
	assert.Equal(t, []any{int64(8), true}, []any{to, done}, "a follower without epochs: the leader's end")
}
