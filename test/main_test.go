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
	goleak.VerifyTestMain(m)
}
