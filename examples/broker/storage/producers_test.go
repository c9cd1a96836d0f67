package storage

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
)

// produce appends a batch of n records from producer id/epoch at seq.
func produce(t *testing.T, p *Partition, id int64, epoch int16, seq int32, n int) (AppendResult, error) {
	t.Helper()
	vals := make([]string, n)
	for i := range vals {
		vals[i] = "v"
	}
	return p.Append(batchtest.Idempotent(id, epoch, seq, 1, vals...))
}

func TestProducerSequences(t *testing.T) {
	type step struct {
		id    int64
		epoch int16
		seq   int32
		n     int
		want  error // nil: appended or deduplicated
		dupOf int64 // the base offset a duplicate is answered with; -1: not a duplicate
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"in sequence", []step{{1, 0, 0, 2, nil, -1}, {1, 0, 2, 3, nil, -1}, {1, 0, 5, 1, nil, -1}}},
		{"a retry of the last batch", []step{{1, 0, 0, 2, nil, -1}, {1, 0, 0, 2, nil, 0}}},
		{"a retry of an older batch", []step{{1, 0, 0, 2, nil, -1}, {1, 0, 2, 1, nil, -1}, {1, 0, 0, 2, nil, 0}}},
		{"a gap", []step{{1, 0, 0, 2, nil, -1}, {1, 0, 3, 1, ErrOutOfOrderSequence, -1}}},
		{"going back", []step{{1, 0, 0, 2, nil, -1}, {1, 0, 2, 1, nil, -1}, {1, 0, 1, 1, ErrOutOfOrderSequence, -1}}},
		{"overlapping a batch is no duplicate", []step{{1, 0, 0, 2, nil, -1}, {1, 0, 0, 1, ErrOutOfOrderSequence, -1}}},
		{"a stale epoch", []step{{1, 1, 0, 1, nil, -1}, {1, 0, 1, 1, ErrInvalidProducerEpoch, -1}}},
		{"a stale epoch retrying", []step{{1, 0, 0, 1, nil, -1}, {1, 1, 0, 1, nil, -1}, {1, 0, 0, 1, ErrInvalidProducerEpoch, -1}}},
		{"a new epoch starts at 0", []step{{1, 0, 0, 2, nil, -1}, {1, 1, 0, 1, nil, -1}}},
		{"a new epoch not at 0", []step{{1, 0, 0, 2, nil, -1}, {1, 1, 4, 1, ErrOutOfOrderSequence, -1}}},
		{"an unknown producer may start anywhere", []step{{1, 0, 17, 2, nil, -1}, {1, 0, 19, 1, nil, -1}}},
		{"producers are independent", []step{{1, 0, 0, 2, nil, -1}, {2, 0, 0, 1, nil, -1}, {1, 0, 2, 1, nil, -1}}},
		{"sequences wrap", []step{{1, 0, math.MaxInt32 - 1, 2, nil, -1}, {1, 0, 0, 1, nil, -1}}},
		{"a batch wrapping", []step{{1, 0, math.MaxInt32 - 1, 3, nil, -1}, {1, 0, 1, 1, nil, -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newTestPartition(t, forever)
			for i, s := range tt.steps {
				before, err := p.Offsets()
				require.NoError(t, err)
				res, err := produce(t, p, s.id, s.epoch, s.seq, s.n)
				if s.want != nil {
					assert.ErrorIs(t, err, s.want, "step %d", i)
					after, _ := p.Offsets()
					assert.Equal(t, before.LogEnd, after.LogEnd, "step %d: nothing appended", i)
					continue
				}
				require.NoError(t, err, "step %d", i)
				if s.dupOf >= 0 {
					assert.True(t, res.Duplicate, "step %d", i)
					assert.Equal(t, s.dupOf, res.BaseOffset, "step %d: the original offset", i)
					after, _ := p.Offsets()
					assert.Equal(t, before.LogEnd, after.LogEnd, "step %d: nothing appended", i)
				} else {
					assert.False(t, res.Duplicate, "step %d", i)
					assert.Equal(t, before.LogEnd, res.BaseOffset, "step %d", i)
				}
			}
		})
	}
}

func TestProducerRemembersTheLastBatchesOnly(t *testing.T) {
	p, _ := newTestPartition(t, forever, WithProducerState(3, -1))
	for seq := int32(0); seq < 4; seq++ {
		_, err := produce(t, p, 1, 0, seq, 1)
		require.NoError(t, err)
	}
	res, err := produce(t, p, 1, 0, 1, 1)
	require.NoError(t, err, "the third last batch is remembered")
	assert.True(t, res.Duplicate)
	assert.Equal(t, int64(1), res.BaseOffset)
	_, err = produce(t, p, 1, 0, 0, 1)
	assert.ErrorIs(t, err, ErrOutOfOrderSequence, "the fourth last is forgotten: a retry that old is out of order, as in Kafka")
}

func TestProducerExpiry(t *testing.T) {
	p, clk := newTestPartition(t, forever, WithProducerState(5, time.Hour))
	_, err := produce(t, p, 1, 3, 0, 2)
	require.NoError(t, err)
	clk.Advance(59 * time.Minute)
	require.NoError(t, p.sweep(clk.Now()))
	_, err = produce(t, p, 1, 2, 0, 1)
	assert.ErrorIs(t, err, ErrInvalidProducerEpoch, "still known")

	clk.Advance(61 * time.Minute)
	require.NoError(t, p.sweep(clk.Now()))
	_, err = produce(t, p, 1, 2, 9, 1)
	assert.NoError(t, err, "forgotten once idle past its expiry: any epoch and sequence starts afresh")
}

func TestProducerStateSurvivesRetention(t *testing.T) {
	p, _ := newTestPartition(t, TopicConfig{Retention: -1, RetentionBytes: 0, MaxMessageBytes: 1 << 20})
	_, err := produce(t, p, 1, 0, 0, 2)
	require.NoError(t, err)
	o, _ := p.Offsets()
	require.Equal(t, o.LogEnd, o.LogStart, "retention.bytes=0 keeps nothing")
	res, err := produce(t, p, 1, 0, 0, 2)
	require.NoError(t, err)
	assert.True(t, res.Duplicate, "the retry is still recognised")
	_, err = produce(t, p, 1, 0, 5, 1)
	assert.ErrorIs(t, err, ErrOutOfOrderSequence)
}
