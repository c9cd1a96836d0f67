package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a run leaves a goroutine behind: the
// purgatory, its reaper, the completion queue, the heap sampler and the
// progress printer must all be stopped when run returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
