package test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadmeQuickStart runs the README's quick start as written: each
// "go run <package> [args] [&]" line, built once and run with its args, in
// order, the ones ending in & in the background.
func TestReadmeQuickStart(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	cmds := quickStart(t, readme)
	require.Len(t, cmds, 2, "the quick start is a broker and a client")

	if c, err := net.DialTimeout("tcp", "127.0.0.1:9092", time.Second); err == nil {
		_ = c.Close()
		t.Fatal("127.0.0.1:9092 is taken: the quick start's broker needs it")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var background []*exec.Cmd
	for i, line := range cmds {
		fields := strings.Fields(line)
		require.GreaterOrEqual(t, len(fields), 3)
		require.Equal(t, []string{"go", "run"}, fields[:2], "quick start line %q", line)
		bg := fields[len(fields)-1] == "&"
		if bg {
			fields = fields[:len(fields)-1]
		}
		bin := filepath.Join(dir, "cmd"+string(rune('0'+i)))
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, fields[2])
		build.Dir = ".."
		out, err := build.CombinedOutput()
		require.NoError(t, err, "go build %s: %s", fields[2], out)
		cmd := exec.CommandContext(ctx, bin, fields[3:]...)
		cmd.Dir = ".."
		dieWithParent(cmd)
		if bg {
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			background = append(background, cmd)
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			require.Eventually(t, func() bool {
				c, err := net.Dial("tcp", "127.0.0.1:9092")
				if err == nil {
					_ = c.Close()
				}
				return err == nil
			}, 30*time.Second, 20*time.Millisecond, "the broker listens on 127.0.0.1:9092; stderr:\n%s", &stderr)
			continue
		}
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, "%s: %s", line, out)
		assert.Contains(t, string(out), "read them back through consumer group", "%s printed:\n%s", line, out)
	}
	// Ctrl-C stops the broker gracefully.
	for _, cmd := range background {
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			assert.NoError(t, err, "exits cleanly on SIGINT")
		case <-time.After(15 * time.Second):
			t.Error("did not exit after SIGINT")
		}
	}
}

// quickStart returns the command lines between the README's quickstart
// markers, inside the code block.
func quickStart(t *testing.T, readme []byte) []string {
	t.Helper()
	var cmds []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "<!-- quickstart"):
			in = true
		case strings.HasPrefix(line, "<!-- /quickstart"):
			return cmds
		case in && strings.HasPrefix(line, "go "):
			if i := strings.Index(line, "#"); i >= 0 {
				line = strings.TrimSpace(line[:i])
			}
			cmds = append(cmds, line)
		}
	}
	t.Fatal("no quickstart markers in README.md")
	return nil
}
