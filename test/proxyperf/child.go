package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// binaries are the broker and proxy the tool built.
type binaries struct {
	dir           string
	broker, proxy string
}

func (b binaries) cleanup() { _ = os.RemoveAll(b.dir) }

// build builds examples/broker and examples/proxy with the go command on
// PATH (or $GO), into a temporary directory.
func build(ctx context.Context, log io.Writer) (binaries, error) {
	dir, err := os.MkdirTemp("", "proxyperf-")
	if err != nil {
		return binaries{}, err
	}
	b := binaries{dir: dir, broker: filepath.Join(dir, "broker"), proxy: filepath.Join(dir, "proxy")}
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	for _, x := range []struct{ out, pkg string }{
		{b.broker, "github.com/gopurgatory/purgatory/examples/broker"},
		{b.proxy, "github.com/gopurgatory/purgatory/examples/proxy"},
	} {
		fmt.Fprintf(log, "proxyperf: building %s\n", x.pkg)
		cmd := exec.CommandContext(ctx, goCmd, "build", "-o", x.out, x.pkg)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			b.cleanup()
			return binaries{}, fmt.Errorf("build %s: %w", x.pkg, err)
		}
	}
	return b, nil
}

// child is a broker or proxy process.
type child struct {
	name    string
	cmd     *exec.Cmd
	addr    string // its Kafka listener, read from its log
	metrics string // its /metrics address
	tail    *tailBuffer
	exited  chan struct{}
}

// listenerLine finds the listener in the "broker serving" or "proxy
// serving" log line.
var listenerLine = regexp.MustCompile(`"listener": "([^"]+)"`)

// start runs bin with args plus a listener on a free port and a metrics
// listener, on cpus if any (under taskset, which execs bin in its place:
// the pid is bin's), and waits until it logs the address it serves on.
func start(ctx context.Context, name string, cpus []int, bin string, args ...string) (*child, error) {
	mport, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &child{name: name, metrics: mport, tail: &tailBuffer{}, exited: make(chan struct{})}
	args = append(args, "--listeners", "127.0.0.1:0", "--metrics.listener", mport, "--log.level", "info")
	if cpus != nil {
		args = append([]string{"-c", cpuList(cpus), bin}, args...)
		bin = "taskset"
	}
	c.cmd = exec.Command(bin, args...)
	out, err := c.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	c.cmd.Stdout = c.tail
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			c.tail.add(line)
			if m := listenerLine.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	select {
	case c.addr = <-found:
	case <-c.exited:
		return nil, fmt.Errorf("%s exited at start:\n%s", name, c.tail)
	case <-time.After(30 * time.Second):
		c.stop()
		return nil, fmt.Errorf("%s did not serve within 30s:\n%s", name, c.tail)
	case <-ctx.Done():
		c.stop()
		return nil, ctx.Err()
	}
	// Its metrics listener starts beside the Kafka one.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := c.scrape(); err == nil {
			return c, nil
		} else if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("%s: /metrics: %w", name, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop sends SIGTERM, and SIGKILL after 15s.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// scrape returns the child's /metrics text.
func (c *child) scrape() (string, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + c.metrics + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/metrics: %s", resp.Status)
	}
	return string(b), err
}

// counter sums the samples of metric name in text whose labels include
// every label of want (name="value" pairs, as the text format writes them).
func counter(text, name string, want ...string) float64 {
	sum := 0.0
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' || !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric with this prefix
		}
		i := strings.LastIndexByte(rest, ' ')
		labels, value := rest[:i], rest[i+1:]
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(labels, w)
		}
		if v, err := strconv.ParseFloat(value, 64); ok && err == nil {
			sum += v
		}
	}
	return sum
}

// freePort returns a loopback address nothing listens on now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// tailBuffer keeps a child's last log lines, for errors.
type tailBuffer struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 40 {
		t.lines = t.lines[len(t.lines)-40:]
	}
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		t.add(l)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
