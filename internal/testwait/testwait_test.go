package testwait

import (
	"testing"
)

func TestReturns(t *testing.T) {
	ran := false
	Returns(t, "a quick function", func() { ran = true })
	if !ran {
		t.Fatal("f did not run")
	}
}
