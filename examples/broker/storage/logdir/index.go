package logdir

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// indexEntrySize is the size of an offset index entry: Kafka's .index
// format, two big-endian 32-bit integers.
const indexEntrySize = 8

// An indexEntry maps a batch to its position in its segment's .log: the
// batch's last offset relative to the segment's base offset, and the
// position where the batch starts (Kafka indexes a batch by its last
// offset too).
type indexEntry struct {
	rel uint32
	pos uint32
}

// lookup returns the position from which to scan for the batch holding
// offset base+rel: that of the last entry whose batch ends at or before it
// (the batch holding it starts there or after), or 0. O(log entries).
func lookup(entries []indexEntry, rel int64) int64 {
	i := sort.Search(len(entries), func(i int) bool { return int64(entries[i].rel) > rel })
	if i == 0 {
		return 0
	}
	return int64(entries[i-1].pos)
}

// encode appends e as the index file holds it.
func (e indexEntry) encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, e.rel)
	return binary.BigEndian.AppendUint32(dst, e.pos)
}

// decodeIndex reads an index file's entries. It refuses a file whose size
// is not a whole number of entries, or whose entries do not increase:
// both are what a torn write leaves, and the index is rebuilt from the
// .log instead.
func decodeIndex(data []byte) ([]indexEntry, error) {
	if len(data)%indexEntrySize != 0 {
		return nil, fmt.Errorf("%d bytes, not a whole number of %d-byte entries", len(data), indexEntrySize)
	}
	if len(data) == 0 {
		return nil, nil
	}
	entries := make([]indexEntry, len(data)/indexEntrySize)
	for i := range entries {
		e := indexEntry{rel: binary.BigEndian.Uint32(data[i*8:]), pos: binary.BigEndian.Uint32(data[i*8+4:])}
		if i > 0 && (e.rel <= entries[i-1].rel || e.pos <= entries[i-1].pos) {
			return nil, fmt.Errorf("entry %d (%d at %d) does not follow entry %d (%d at %d)",
				i, e.rel, e.pos, i-1, entries[i-1].rel, entries[i-1].pos)
		}
		entries[i] = e
	}
	return entries, nil
}

// encodeIndex returns the index file holding entries.
func encodeIndex(entries []indexEntry) []byte {
	out := make([]byte, 0, len(entries)*indexEntrySize)
	for _, e := range entries {
		out = e.encode(out)
	}
	return out
}

// indexer decides where index entries go as batches are appended, by
// Kafka's rule: a batch gets an entry when more than interval bytes were
// appended since the last entry (so the first batch of a segment gets
// none: position 0 needs no entry).
type indexer struct {
	interval int64
	since    int64 // bytes appended since the last entry
}

// add accounts for a batch of size bytes appended at pos whose last
// offset is base+rel, and returns its entry if it gets one.
func (x *indexer) add(rel int64, pos int64, size int) (indexEntry, bool) {
	var e indexEntry
	ok := x.since > x.interval
	if ok {
		e, x.since = indexEntry{rel: uint32(rel), pos: uint32(pos)}, 0
	}
	x.since += int64(size)
	return e, ok
}
