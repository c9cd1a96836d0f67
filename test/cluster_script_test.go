package test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestClusterScript runs the README's one-command cluster,
// scripts/cluster.sh, as three broker processes on free loopback ports: a
// client bootstrapping from broker 2 auto-creates a topic (of replication
// factor 3, the script's default), produces to it with acks=all and reads
// it back through a consumer group; SIGTERM to the script stops all three.
func TestClusterScript(t *testing.T) {
	base := freePortRun(t, 3, 1000) // the script's quorum ports are its Kafka ports + 1000
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stop := startClusterScript(ctx, t, base)

	cl, err := kgo.NewClient(kgo.SeedBrokers(net.JoinHostPort("127.0.0.1", strconv.Itoa(base+1))),
		kgo.DefaultProduceTopic("script"), kgo.AllowAutoTopicCreation(), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ConsumeTopics("script"), kgo.ConsumerGroup("script"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	for i := range 10 {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr())
	}
	var got []string
	for len(got) < 10 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, fs.Err0())
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	assert.Equal(t, []string{"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"}, got)
	cl.Close()

	assert.NoError(t, stop(), "the script and its brokers stop cleanly")
}

// TestClusterScriptSCRAM runs scripts/cluster.sh with ADD_SCRAM, as
// scripts/kgo-integration.sh does with CLUSTER=1: each broker has a
// second listener, SCRAM (SASL_PLAINTEXT), on its port + 2000, and the
// user the script was given, committed once; a client of broker 2's
// SCRAM listener authenticates as that user and is told every broker at
// its SCRAM address (each registered both listeners, and Metadata
// answers with the endpoints of the listener it came in on), and a wrong
// password is refused.
func TestClusterScriptSCRAM(t *testing.T) {
	base := freePortRun(t, 3, 1000, 2000) // Kafka, quorum and SCRAM ports
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stop := startClusterScript(ctx, t, base, "ADD_SCRAM=SCRAM-SHA-512=[name=alice,password=alice-secret]")
	scramAddr := func(id int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(base+2000+id-1)) }

	cl, err := kgo.NewClient(kgo.SeedBrokers(scramAddr(2)),
		kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	require.NoError(t, err)
	defer cl.Close()
	want := []string{scramAddr(1), scramAddr(2), scramAddr(3)}
	var brokers []string
	// Until the controller has committed alice and broker 2 has applied
	// it, and until every broker has registered its SCRAM listener.
	require.Eventually(t, func() bool {
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			return false
		}
		brokers = brokers[:0]
		for _, b := range meta.Brokers {
			brokers = append(brokers, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))))
		}
		slices.Sort(brokers)
		return slices.Equal(brokers, want)
	}, 30*time.Second, 50*time.Millisecond, "alice authenticates, and every broker is told at its SCRAM address")
	cl.Close()

	bad, err := kgo.NewClient(kgo.SeedBrokers(scramAddr(3)),
		kgo.SASL(scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism()))
	require.NoError(t, err)
	defer bad.Close()
	assert.ErrorIs(t, bad.Ping(ctx), kerr.SaslAuthenticationFailed, "a wrong password")
	bad.Close()

	assert.NoError(t, stop(), "the script and its brokers stop cleanly")
}

// startClusterScript starts scripts/cluster.sh on base with env added to
// its environment and waits until it says the cluster is up. It returns
// stop, which asks the script to stop its brokers and waits for it; the
// test's end calls it too, whatever happened before (a second call
// returns at once).
func startClusterScript(ctx context.Context, t *testing.T, base int, env ...string) (stop func() error) {
	t.Helper()
	// Not CommandContext: killing the script would leave its brokers
	// running; stop asks it to stop them.
	cmd := exec.Command("./scripts/cluster.sh")
	cmd.Dir = ".."
	cmd.Env = append(append(cmd.Environ(), "BASE_PORT="+strconv.Itoa(base), "LOGS="+t.TempDir()), env...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{}) // closed once the script has exited, with waitErr
	var waitErr error
	stop = func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return waitErr
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return errors.New("scripts/cluster.sh did not stop on SIGTERM in 20s")
		}
	}
	t.Cleanup(func() { _ = stop() })
	up := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var lines []string
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), "is up") {
				up <- strings.Join(lines, "\n")
			}
		}
		waitErr = cmd.Wait()
		close(exited)
	}()
	select {
	case out := <-up:
		t.Log(out)
	case <-exited:
		t.Fatalf("scripts/cluster.sh exited before the cluster was up: %v", waitErr)
	case <-ctx.Done():
		t.Fatal("the cluster did not come up")
	}
	return stop
}
