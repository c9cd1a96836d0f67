// Package atomicfile replaces small files durably, for the broker's
// metadata on disk (the topic catalog, meta.properties, the group offsets
// log when it is compacted): a crash leaves the old file or the new one,
// never a mix, and once Write returns the new one survives a power loss.
//
// Every fsync goes through the function the caller passes, so that a test
// can count or fail them.
package atomicfile
