package cache

import "errors"

// The errors of Append, checked with errors.Is. Either ends the tail of the
// partition: the proxy then reads it from upstream.
var (
	// ErrCorruptBatch is wrapped for bytes that are not whole v2 record
	// batches: a length too small to hold a header, or a batch that does
	// not follow the one before it.
	ErrCorruptBatch = errors.New("cache: corrupt record batch")

	// ErrMessageFormat is wrapped for a batch of the old message formats
	// (magic 0 or 1), which the cache does not parse.
	ErrMessageFormat = errors.New("cache: unsupported message format")
)
