package test

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd's process when the test process
// dies, so that a test killed by its timeout, or one that panics before
// its cleanups, leaves no broker running (and holding its ports) behind.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
