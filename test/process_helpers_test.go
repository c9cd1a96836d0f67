package test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The hostile-client tests run the broker binary itself (go run
// ./examples/broker, built once per test run) as a child process, under
// prlimit's limits where an attack could otherwise take the machine down:
// its file descriptors, its address space.

var (
	brokerBinOnce sync.Once
	brokerBinDir  string
	brokerBin     string
	brokerBinErr  error
)

// brokerBinary builds the broker's binary once per test run and returns
// its path; TestMain removes it.
func brokerBinary(t testing.TB) string {
	t.Helper()
	brokerBinOnce.Do(func() {
		if brokerBinDir, brokerBinErr = os.MkdirTemp("", "purgatory-broker-bin-"); brokerBinErr != nil {
			return
		}
		brokerBin = filepath.Join(brokerBinDir, "broker")
		build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", brokerBin, "../examples/broker")
		if out, err := build.CombinedOutput(); err != nil {
			brokerBinErr = fmt.Errorf("go build ./examples/broker: %v\n%s", err, out)
		}
	})
	require.NoError(t, brokerBinErr)
	return brokerBin
}

// removeBrokerBinary deletes what brokerBinary built.
func removeBrokerBinary() {
	if brokerBinDir != "" {
		_ = os.RemoveAll(brokerBinDir)
	}
}

// limits are prlimit's for a child broker; zero leaves one as it is.
// netns, if set, is the network namespace it runs in (ip netns exec).
type limits struct {
	nofile  int   // RLIMIT_NOFILE, soft and hard
	asBytes int64 // RLIMIT_AS, soft and hard
	netns   string
}

// brokerProcess is a broker running as a child process.
type brokerProcess struct {
	t           testing.TB
	cmd         *exec.Cmd
	addr        string // its Kafka listener
	metricsAddr string // its /metrics, if asked for
	exited      chan struct{}
	state       *os.ProcessState

	mu  sync.Mutex
	log bytes.Buffer // its stderr
}

var (
	listenerLine = regexp.MustCompile(`broker serving\s+\{"listener": "([^"]+)"`)
	metricsLine  = regexp.MustCompile(`serving /metrics and /debug/pprof\s+\{"addr": "([^"]+)"`)
)

// startBrokerProcess runs the broker binary under lim with args, on a
// free loopback port, and waits until it serves. The test's end kills it.
func startBrokerProcess(t testing.TB, lim limits, args ...string) *brokerProcess {
	t.Helper()
	p := runBrokerProcess(t, lim, args...)
	require.Eventually(t, func() bool { return p.served() || p.hasExited() }, 30*time.Second, 10*time.Millisecond,
		"the broker starts")
	require.False(t, p.hasExited(), "the broker exited at start:\n%s", p.output())
	return p
}

// runBrokerProcess starts the broker binary without waiting for it.
func runBrokerProcess(t testing.TB, lim limits, args ...string) *brokerProcess {
	t.Helper()
	bin := brokerBinary(t)
	argv := []string{bin, "--listeners", "127.0.0.1:0"}
	argv = append(argv, args...)
	if lim.nofile > 0 || lim.asBytes > 0 {
		prlimit, err := exec.LookPath("prlimit")
		require.NoError(t, err, "prlimit (util-linux) runs the broker under limits")
		pre := []string{prlimit}
		if lim.nofile > 0 {
			pre = append(pre, fmt.Sprintf("--nofile=%d:%d", lim.nofile, lim.nofile))
		}
		if lim.asBytes > 0 {
			pre = append(pre, fmt.Sprintf("--as=%d:%d", lim.asBytes, lim.asBytes))
		}
		argv = append(append(pre, "--"), argv...)
	}
	if lim.netns != "" {
		argv = append([]string{"ip", "netns", "exec", lim.netns}, argv...)
	}
	p := &brokerProcess{t: t, cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{})}
	dieWithParent(p.cmd)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.Write(sc.Bytes())
			p.log.WriteByte('\n')
			if m := listenerLine.FindStringSubmatch(sc.Text()); m != nil {
				p.addr = m[1]
			}
			if m := metricsLine.FindStringSubmatch(sc.Text()); m != nil {
				p.metricsAddr = m[1]
			}
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() {
		<-copied // Wait closes the pipe: read it all first
		_ = p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("broker process output:\n%s", p.output())
		}
	})
	return p
}

func (p *brokerProcess) served() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr != ""
}

func (p *brokerProcess) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// outputSince returns the lines the broker logged from t on (each line
// starts with its RFC 3339 time, as zap's console encoder writes it; a
// line without one goes with the line before).
func (p *brokerProcess) outputSince(t time.Time) string {
	var out strings.Builder
	keep := false
	for line := range strings.Lines(p.output()) {
		if ts, _, ok := strings.Cut(line, "\t"); ok {
			if at, err := time.Parse(time.RFC3339Nano, ts); err == nil {
				keep = !at.Before(t)
			}
		}
		if keep {
			out.WriteString(line)
		}
	}
	return out.String()
}

// output returns what the broker logged so far.
func (p *brokerProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// stop sends SIGTERM, the graceful shutdown, and waits for the exit.
func (p *brokerProcess) stop() {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.t.Fatal("the broker did not stop within 30s of SIGTERM")
	}
	require.True(p.t, p.state.Success(), "a clean exit:\n%s", p.output())
}

// wait waits for the process to exit on its own, up to 30s.
func (p *brokerProcess) wait() *os.ProcessState {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.state
	case <-time.After(30 * time.Second):
		p.t.Fatal("the broker did not exit within 30s")
		return nil
	}
}

// cpu returns the CPU time the process has used (user and system), from
// /proc: the child's rusage while it runs.
func (p *brokerProcess) cpu() time.Duration {
	p.t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	require.NoError(p.t, err)
	// The command may hold spaces: the fields that follow it start
	// after its closing parenthesis. utime and stime are fields 14 and
	// 15, in clock ticks (100 a second on Linux).
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	require.NoError(p.t, err1)
	require.NoError(p.t, err2)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// metric returns the value of a metric without labels from the child's
// /metrics (it must run with --metrics.listener).
func (p *brokerProcess) metric(name string) float64 {
	p.t.Helper()
	resp, err := http.Get("http://" + p.metricsAddr + "/metrics")
	require.NoError(p.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(p.t, err)
			return f
		}
	}
	p.t.Fatalf("no metric %s", name)
	return 0
}
