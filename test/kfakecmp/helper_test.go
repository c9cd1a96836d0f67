package kfakecmp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
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
	helperEnv     = "KFAKECMP_BROKER"
	profileEnv    = "KFAKECMP_CPUPROFILE"
	memProfileEnv = "KFAKECMP_MEMPROFILE"
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
	case "purgatory3":
		addr, stop = startCluster3(t)
	case "kfake3":
		c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1))
		if err != nil {
			t.Fatal(err)
		}
		addr = strings.Join(c.ListenAddrs(), ",")
		stop = c.Close
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
	case "purgatory-sasl_ssl", "kfake-tls", "kfake-sasl_ssl":
		addr, stop = startSecure(t, kind)
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
	// KFAKECMP_MEMPROFILE=path writes the child broker's allocation
	// profile (every allocation since it started, sampled as the runtime
	// does) to path when it stops.
	if path := os.Getenv(memProfileEnv); path != "" {
		stopBroker := stop
		stop = func() {
			stopBroker()
			f, err := os.Create(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				t.Error(err)
			}
		}
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

// startCluster3 runs three example brokers in this process as one cluster
// (replication factor 3, min.insync.replicas 2, as Kafka is run in
// production) and returns their addresses, comma-separated.
func startCluster3(t *testing.T) (string, func()) {
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	var addrs, spec, voters []string
	for id := 1; id <= 3; id++ {
		addrs = append(addrs, free())
		spec = append(spec, fmt.Sprintf("%d@%s", id, addrs[id-1]))
		voters = append(voters, fmt.Sprintf("%d@%s", id, free()))
	}
	var servers []*server.Server
	for id := 1; id <= 3; id++ {
		cfg := server.Default()
		cfg.NodeID, cfg.Listener = int32(id), addrs[id-1]
		cfg.Cluster, cfg.ControllerQuorumVoters = strings.Join(spec, ","), strings.Join(voters, ",")
		cfg.DefaultReplication, cfg.MinInsyncReplicas = 3, 2
		cfg.ControllerElectionTimeout = 300 * time.Millisecond
		cfg.GroupInitialRebalance = 0
		s, err := server.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.Serve() }()
		servers = append(servers, s)
	}
	return strings.Join(addrs, ","), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, s := range servers {
			_ = s.Close(ctx)
		}
	}
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
func startBroker(b *testing.B, kind string, env ...string) *child {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBroker$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), helperEnv+"="+kind), env...)
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

// clusters are the three-broker kinds: three example brokers in one child
// process, and kfake with three brokers in another.
var clusters = []string{"purgatory3", "kfake3"}

// seeds returns the child's broker addresses.
func (c *child) seeds() []string { return strings.Split(c.addr, ",") }
