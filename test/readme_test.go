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

// TestReadmeExample builds and runs the README's example program as
// written, against this checkout (a workspace of its own), and checks that
// it prints what its "// Output:" comment says.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	code := between(t, string(readme), "<!-- example:", "<!-- /example -->")
	code = between(t, code, "```go\n", "```")
	_, want, ok := strings.Cut(code, "\t// Output:\n")
	require.True(t, ok, "the example ends with the output it prints")
	var lines []string
	for l := range strings.SplitSeq(strings.TrimRight(want, "}\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(strings.TrimSpace(l), "// "))
	}

	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module readme\n\ngo 1.26\n"), 0o644))
	work := "go 1.26.0\n\nuse (\n\t.\n\t" + root + "\n)\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.work"), []byte(work), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK="+filepath.Join(dir, "go.work"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go run the README's example: %s", out)
	assert.Equal(t, strings.Join(lines, "\n"), strings.TrimSpace(string(out)))
}

// between returns what s holds between the first start and the end after
// it.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, start)
	require.True(t, ok, "%q not found", start)
	in, _, ok := strings.Cut(after, end)
	require.True(t, ok, "%q not found after %q", end, start)
	return in
}
