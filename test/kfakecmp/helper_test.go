package kfakecmp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

const helperEnv = "KFAKECMP_BROKER"

// TestHelperBroker is not a test: it is the child process a benchmark
// starts, running one broker until its stdin closes. It prints the broker's
// address on its first line.
func TestHelperBroker(t *testing.T) {
	kind := os.Getenv(helperEnv)
	if kind == "" {
		return // run as a test: nothing to do
	}
	var addr string
	var stop func()
	switch kind {
	case "purgatory":
		cfg := server.Default()
		cfg.Listener = "127.0.0.1:0"
		s, err := server.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.Serve() }()
		addr = s.Addr().String()
		stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.Close(ctx)
		}
	case "kfake":
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
		if err != nil {
			t.Fatal(err)
		}
		addr = c.ListenAddrs()[0]
		stop = c.Close
	default:
		t.Fatalf("unknown broker %q", kind)
	}
	fmt.Println(addr)
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	stop()
	os.Exit(0)
}

// child is a broker running in a child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
	addr  string
}

// startBroker starts kind ("purgatory" or "kfake") in a child process,
// stopped at the end of the benchmark.
func startBroker(b *testing.B, kind string) *child {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBroker$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+kind)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("%s did not start: %v", kind, err)
	}
	c := &child{cmd: cmd, stdin: stdin, addr: strings.TrimSpace(line)}
	b.Cleanup(func() {
		_ = c.stdin.Close()
		_ = c.cmd.Wait()
	})
	return c
}

// cpu returns the child's user+system CPU time so far.
func (c *child) cpu(b *testing.B) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15 (man 5 proc).
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const hz = 100 // USER_HZ, 100 on Linux
	return time.Duration(utime+stime) * time.Second / hz
}

var brokers = []string{"purgatory", "kfake"}
