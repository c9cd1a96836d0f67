package cache

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batchOf encodes a valid v2 record batch of records values at base, with
// attrs (0x10: transactional, 0x20: control).
func batchOf(base int64, attrs int16, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the zero length took one byte
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:     base,
		Length:          int32(minBatchLength + len(recs)),
		Magic:           2,
		Attributes:      attrs,
		LastOffsetDelta: int32(len(values) - 1),
		ProducerID:      -1,
		ProducerEpoch:   -1,
		FirstSequence:   -1,
		NumRecords:      int32(len(values)),
		Records:         recs,
	}
	b := rb.AppendTo(nil)
	crc := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(b[17:21], crc)
	return b
}

// join concatenates batches, as a fetch response holds them.
func join(batches ...[]byte) []byte {
	var out []byte
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}

// headers lists the batches of records.
func headers(records []byte) []Header {
	var hs []Header
	if _, err := Split(records, func(h Header) { hs = append(hs, h) }); err != nil {
		panic(err)
	}
	return hs
}
