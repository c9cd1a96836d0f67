//go:build !unix

package kafkanet

// RaiseFileLimit returns the file descriptors a process may hold where
// there is no RLIMIT_NOFILE to read: MaxFileLimit.
func RaiseFileLimit() (int, error) { return MaxFileLimit, nil }
