package test

import (
	"bufio"
	"context"
	"fmt"
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
// (see TestMain): the process TestKill9 kills.
const childBrokerEnv = "PURGATORY_TEST_BROKER_LOG_DIRS"

// runChildBroker serves a broker on dir until the process is killed,
// after printing its address on the first line of stdout.
func runChildBroker(dir string) {
	cfg := durableConfig(dir)
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
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childBrokerEnv+"="+dir)
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	require.True(t, ok, "the child says where it listens: %q", line)

	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelError, nil))}
	admin, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	defer admin.Close()
	createTopic(t, admin, topic, partitions)
	prod, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))...)
	require.NoError(t, err)
	defer prod.Close()

	// Produce until killed: each acknowledgement is recorded with its
	// offset; the kill comes once 500 are in.
	var mu sync.Mutex
	acked := make(map[string]int64) // value → offset
	produced := 0
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	killed := false
	for i := 0; !killed; i++ {
		r := &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "r%06d-%0100d", i, i)}
		produced++
		prod.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			if err == nil {
				mu.Lock()
				acked[string(r.Value)] = r.Offset
				mu.Unlock()
			}
		})
		if ackedCount() >= 500 {
			require.NoError(t, child.Process.Signal(syscall.SIGKILL))
			_ = child.Wait()
			killed = true
		}
		require.Less(t, produced, 50_000, "the broker acknowledges")
	}
	// What was in flight fails: an idempotent producer waits for a
	// response it will never get before giving up on a record it may
	// have written, so abandon them (some may be in the log: they were
	// not acknowledged, and the test allows them). Flush returns once
	// every callback has run.
	prod.UnsafeAbortBufferedRecords()
	flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, prod.Flush(flushCtx))
	n := ackedCount()
	t.Logf("killed the broker with %d of %d records acknowledged", n, produced)

	srv, _ := runBroker(t, durableConfig(dir))
	cl := newClient(t, srv, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ends := endOffsets(t, cl, topic, partitions)
	got := consumeTo(t, cl, ends)
	seen := make(map[string]int64)
	total := 0
	for p := range int32(partitions) {
		for i, r := range got[p] {
			require.Equal(t, int64(i), r.Offset, "partition %d: offsets without a gap", p)
			_, dup := seen[string(r.Value)]
			require.False(t, dup, "record %.7s is there twice", r.Value)
			seen[string(r.Value)] = r.Offset
			total++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for v, off := range acked {
		at, ok := seen[v]
		require.True(t, ok, "acknowledged record %.7s survived the kill", v)
		require.Equal(t, off, at, "record %.7s is at the offset it was acknowledged with", v)
	}
	t.Logf("after the restart: %d records, %d of them acknowledged before the kill", total, len(acked))
	assert.LessOrEqual(t, total, produced)
}
