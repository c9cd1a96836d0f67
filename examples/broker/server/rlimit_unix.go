//go:build unix

package server

import "syscall"

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit and
// returns the soft limit then in effect. Go's runtime does the same when
// a program starts (since Go 1.19); the broker does it again, explicitly,
// and reads what it got, since its file budget depends on it.
func raiseFileLimit() (int, error) {
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
	if lim.Cur > maxFileLimit {
		return maxFileLimit, nil // unlimited, or as good as
	}
	return int(lim.Cur), nil
}
