// Package goid tells which goroutine is running, for the one question the
// library cannot answer otherwise: is Close being called from a callback
// that runs on a goroutine Close would wait for? Netty's timer asks the same
// of its worker thread before it stops.
//
// Go does not expose goroutine ids, on purpose; the id is parsed from the
// header runtime.Stack writes ("goroutine 42 [running]:"), which the runtime
// has printed in that form since Go 1. It costs about a microsecond, so it is
// only read when a library goroutine starts and when something closes, never
// on a hot path.
package goid

import "runtime"

// ID returns the id of the calling goroutine, or 0 if it cannot be read.
func ID() uint64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	const prefix = "goroutine "
	if n <= len(prefix) || string(buf[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range buf[len(prefix):n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
