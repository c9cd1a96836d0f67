package test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(childBrokerEnv); dir != "" {
		runChildBroker(dir) // TestKill9's broker process: never returns
	}
	goleak.VerifyTestMain(cleanup{m})
}

// cleanup runs the tests, then removes what they left outside their
// temporary directories (the broker binary built for the child-process
// tests).
type cleanup struct{ m *testing.M }

func (c cleanup) Run() int {
	defer removeBrokerBinary()
	return c.m.Run()
}
