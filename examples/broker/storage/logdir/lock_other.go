//go:build !unix

package logdir

import "os"

// lockFile does nothing where flock is not available: two brokers must not
// be started on one directory there.
func lockFile(*os.File) error { return nil }
