package server

import (
	"testing"

	"go.uber.org/goleak"
)

// The service starts goroutines (the purgatory's, the HTTP server's, the
// clients' connections): none may outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
