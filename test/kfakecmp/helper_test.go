package kfakecmp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

const (
	helperEnv  = "KFAKECMP_BROKER"
	profileEnv = "KFAKECMP_CPUPROFILE"
)

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
	// KFAKECMP_CPUPROFILE=path writes the child broker's CPU profile
	// (either broker: the benchmarks start one per sub-benchmark, so
	// narrow -bench to one broker) to path, from start to stop.
	if path := os.Getenv(profileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		stopBroker := stop
		stop = func() { stopBroker(); pprof.StopCPUProfile(); _ = f.Close() }
	}
	fmt.Println(addr)
	// Each "cpu" line is answered with this process's user+system CPU time
	// in nanoseconds (getrusage: microsecond resolution, where
	// /proc/<pid>/stat counts 10ms ticks), then the bytes it has
	// allocated on the heap (runtime/metrics, without stopping the world);
	// EOF stops the broker.
	sc := bufio.NewScanner(os.Stdin)
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	for sc.Scan() {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		metrics.Read(allocs)
		fmt.Println(ru.Utime.Nano()+ru.Stime.Nano(), allocs[0].Value.Uint64())
	}
	stop()
	os.Exit(0)
}

// child is a broker running in a child process.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
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
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		b.Fatalf("%s did not start: %v", kind, err)
	}
	c := &child{cmd: cmd, stdin: stdin, out: out, addr: strings.TrimSpace(line)}
	b.Cleanup(func() {
		_ = c.stdin.Close()
		_ = c.cmd.Wait()
	})
	return c
}

// usage is what a child has used so far, as it reports it.
type usage struct {
	cpu   time.Duration // user+system CPU time
	alloc uint64        // bytes allocated on the heap
}

// sub returns u less an earlier reading.
func (u usage) sub(before usage) usage {
	return usage{cpu: u.cpu - before.cpu, alloc: u.alloc - before.alloc}
}

// usage returns what the child has used so far, as it reports it.
func (c *child) usage(b *testing.B) usage {
	b.Helper()
	if _, err := io.WriteString(c.stdin, "cpu\n"); err != nil {
		b.Fatal(err)
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	var ns int64
	var u usage
	if _, err := fmt.Sscan(line, &ns, &u.alloc); err != nil {
		b.Fatalf("child's usage %q: %v", line, err)
	}
	u.cpu = time.Duration(ns)
	return u
}

// cpu returns the child's user+system CPU time so far.
func (c *child) cpu(b *testing.B) time.Duration { return c.usage(b).cpu }

var brokers = []string{"purgatory", "kfake"}
