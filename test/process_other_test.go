//go:build !linux

package test

import "os/exec"

// dieWithParent does nothing where the kernel has no parent-death signal:
// the tests' cleanups kill their children.
func dieWithParent(*exec.Cmd) {}
