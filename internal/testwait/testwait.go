// Package testwait holds what the library's tests share for waiting: it is
// imported by tests only.
package testwait

import (
	"testing"
	"time"
)

// Returns fails the test if f has not returned within a generous bound: a
// hang (a deadlock) becomes a failure instead of the whole run's timeout.
// The bound decides nothing else.
func Returns(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return: deadlock", what)
	}
}
