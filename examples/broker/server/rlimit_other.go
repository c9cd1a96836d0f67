//go:build !unix

package server

// raiseFileLimit returns the file descriptors a process may hold where
// there is no RLIMIT_NOFILE to read: as many as the budget counts at most.
func raiseFileLimit() (int, error) { return maxFileLimit, nil }
