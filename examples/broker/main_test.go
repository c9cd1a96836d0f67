package main

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHelpIsNotAnError: -h prints the flags and ends well (exit status 0),
// as an operator asking for help expects, not with "flag: help requested".
func TestHelpIsNotAnError(t *testing.T) {
	require.NoError(t, run([]string{"-h"}))
}
