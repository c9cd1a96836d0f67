//go:build unix

package logdir

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, without waiting, as
// Kafka locks each log dir's .lock file: a second broker on the same
// directory fails at once instead of corrupting it. The lock dies with the
// process, so a crash never leaves the directory locked.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w: %s is locked by another process", ErrLocked, f.Name())
	}
	return err
}
