package test

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// childBrokerEnv makes the test binary a broker on the directory it names
// (see TestMain): the process TestKill9 kills. With childClusterEnv set
// too, to a --cluster list, it is broker 1 of that cluster, listening on
// its entry's address.
const (
	childBrokerEnv  = "PURGATORY_TEST_BROKER_LOG_DIRS"
	childClusterEnv = "PURGATORY_TEST_BROKER_CLUSTER"
	childVotersEnv  = "PURGATORY_TEST_BROKER_VOTERS" // its controller.quorum.voters
)

// runChildBroker serves a broker on dir until the process is killed,
// after printing its address on the first line of stdout.
func runChildBroker(dir string) {
	cfg := durableConfig(dir)
	if spec := os.Getenv(childClusterEnv); spec != "" {
		cfg.NodeID, cfg.Cluster, cfg.ControllerQuorumVoters = 1, spec, os.Getenv(childVotersEnv)
		first, _, _ := strings.Cut(spec, ",")
		cfg.Listener = strings.TrimPrefix(first, "1@")
		clusterTimings(&cfg)
	}
	srv, err := server.New(cfg, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child broker:", err)
		os.Exit(2)
	}
	fmt.Println("listening", srv.Addr())
	err = srv.Serve()
	fmt.Fprintln(os.Stderr, "child broker:", err)
	os.Exit(1)
}

// startChild starts the test binary as a broker on dir (runChildBroker),
// with env added, and returns it and its address. The test's end kills it.
func startChild(t *testing.T, dir string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	child := exec.Command(os.Args[0], "-test.run=^$")
	dieWithParent(child)
	child.Env = append(append(os.Environ(), childBrokerEnv+"="+dir), env...)
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	require.True(t, ok, "the child says where it listens: %q", line)
	return child, addr
}

// ackLedger records what a producer was told: each acknowledged value
// with its offset.
type ackLedger struct {
	mu       sync.Mutex
	acked    map[string]int64 // value → offset
	ends     map[int32]int64  // partition → the offset after its last acknowledged record
	produced int
}

// snapshot returns what is acknowledged so far, value → offset.
func (l *ackLedger) snapshot() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.acked)
}

// ackedEnds returns, for each partition, the offset after its last
// acknowledged record: every partition's log holds at least that much.
func (l *ackLedger) ackedEnds() map[int32]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.ends)
}

// produceUntilKilled produces record i to partition i modulo partitions
// with prod, until kill has been called (with what is acknowledged so
// far) once acks records are acknowledged, some on every partition; then it abandons what is in flight (an idempotent producer
// waits for a response it will never get before giving up on a record it
// may have written: some may be in the log, unacknowledged, which the
// checks allow) and returns once every callback has run.
func produceUntilKilled(t *testing.T, prod *kgo.Client, partitions, acks int, kill func(*ackLedger)) *ackLedger {
	t.Helper()
	l := &ackLedger{acked: make(map[string]int64), ends: make(map[int32]int64)}
	// Enough acknowledged, on every partition: acknowledgements come
	// unevenly, each partition's as its own replication allows.
	enough := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.acked) >= acks && len(l.ends) == partitions
	}
	for i := 0; ; i++ {
		r := &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "r%06d-%0100d", i, i)}
		l.produced++
		prod.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			if err == nil {
				l.mu.Lock()
				l.acked[string(r.Value)] = r.Offset
				l.ends[r.Partition] = max(l.ends[r.Partition], r.Offset+1)
				l.mu.Unlock()
			}
		})
		if enough() {
			kill(l)
			break
		}
		require.Less(t, l.produced, 50_000, "the broker acknowledges")
	}
	prod.UnsafeAbortBufferedRecords()
	flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, prod.Flush(flushCtx))
	return l
}

// check verifies what got holds, by partition: offsets from 0 without a
// gap, no value twice, and every acknowledged value at the offset it was
// acknowledged with. It returns the number of records.
func (l *ackLedger) check(t *testing.T, got map[int32][]*kgo.Record) int {
	t.Helper()
	seen := make(map[string]int64)
	total := 0
	for p, recs := range got {
		for i, r := range recs {
			require.Equal(t, int64(i), r.Offset, "partition %d: offsets without a gap", p)
			_, dup := seen[string(r.Value)]
			require.False(t, dup, "record %.7s is there twice", r.Value)
			seen[string(r.Value)] = r.Offset
			total++
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for v, off := range l.acked {
		at, ok := seen[v]
		require.True(t, ok, "acknowledged record %.7s survived the kill", v)
		require.Equal(t, off, at, "record %.7s is at the offset it was acknowledged with", v)
	}
	assert.LessOrEqual(t, total, l.produced)
	return total
}

// TestKill9 runs the broker in a child process (this test binary, started
// again), kills it with SIGKILL while a producer is sending to it (acks=all,
// idempotent), and starts a broker on its directory: every record the
// producer was told was written is there, at the offset it was given, and
// no record is there twice. Nothing is fsynced (Kafka's default flush
// settings): what survives is what the kernel's page cache holds, which a
// process's death does not touch.
func TestKill9(t *testing.T) {
	const topic, partitions = "killed", 3
	dir := t.TempDir()
	child, addr := startChild(t, dir)

	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelError, nil))}
	admin, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	defer admin.Close()
	createTopic(t, admin, topic, partitions)
	prod, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))...)
	require.NoError(t, err)
	defer prod.Close()

	acked := produceUntilKilled(t, prod, partitions, 500, func(*ackLedger) {
		require.NoError(t, child.Process.Signal(syscall.SIGKILL))
		_ = child.Wait()
	})
	t.Logf("killed the broker with %d of %d records acknowledged", len(acked.acked), acked.produced)

	srv, _ := runBroker(t, durableConfig(dir))
	cl := newClient(t, srv, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	total := acked.check(t, consumeTo(t, cl, endOffsets(t, cl, topic, partitions)))
	t.Logf("after the restart: %d records, %d of them acknowledged before the kill", total, len(acked.acked))
}
