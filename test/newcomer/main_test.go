package newcomer

import (
	"testing"

	"go.uber.org/goleak"
)

// Both versions of every program start goroutines (the purgatory's and the
// timer's, time.AfterFunc's): none may outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
