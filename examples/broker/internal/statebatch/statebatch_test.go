package statebatch

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEncodeWalk(t *testing.T) {
	now := time.UnixMilli(1700000000000)
	recs := []kmsg.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b")}}
	raw := append(Encode(now, 0, -1, -1, recs), Encode(now, AttrTransactional, 7, 2, recs[:1])...)
	// The second batch placed after the first, as the log places it.
	type seen struct {
		key        string
		producer   int64
		attrs      int16
		firstDelta int32
	}
	var got []seen
	next, err := Walk(raw, 0, func(b *kmsg.RecordBatch, rec *kmsg.Record) error {
		got = append(got, seen{string(rec.Key), b.ProducerID, b.Attributes, rec.OffsetDelta})
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []seen{{"a", -1, 0, 0}, {"b", -1, 0, 1}, {"a", 7, AttrTransactional, 0}}, got)
	assert.Equal(t, int64(1), next, "the offset after the last batch, as its header says (base 0, one record)")

	stop := errors.New("stop")
	n, err := Walk(raw, 5, func(*kmsg.RecordBatch, *kmsg.Record) error { return stop })
	assert.ErrorIs(t, err, stop)
	assert.Equal(t, int64(5), n, "nothing walked whole")

	for name, bad := range map[string][]byte{
		"short":     raw[:8],
		"cut":       raw[:40],
		"truncated": raw[:len(raw)-1],
	} {
		_, err := Walk(bad, 0, func(*kmsg.RecordBatch, *kmsg.Record) error { return nil })
		assert.ErrorIs(t, err, ErrMalformed, name)
	}
}
