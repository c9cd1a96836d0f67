//go:build unix

package kafkanet

import "syscall"

// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit and
// returns the soft limit then in effect, at most MaxFileLimit. Go's
// runtime does the same when a program starts (since Go 1.19); a server
// does it again, explicitly, and reads what it got, when it shares its
// file descriptors out (the broker's max.connections and log files).
func RaiseFileLimit() (int, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	if lim.Cur > MaxFileLimit {
		return MaxFileLimit, nil // unlimited, or as good as
	}
	return int(lim.Cur), nil
}
