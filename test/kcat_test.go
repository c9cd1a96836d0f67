package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// kcatEnv, set to 1, makes the kcat tests fail rather than skip when kcat
// is not installed; .ci/run installs kcat (Debian's package) and sets it.
const kcatEnv = "PURGATORY_REQUIRE_KCAT"

// kcatPath returns kcat's path, a client on librdkafka (the C library under
// the Python, Go, .NET and many other Kafka clients), the second client
// family these tests use besides franz-go.
func kcatPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv(kcatEnv) == "1" {
			t.Fatalf("kcat is not installed, and %s=1 requires it: apt-get install kcat", kcatEnv)
		}
		t.Skipf("kcat is not installed (apt-get install kcat); CI installs it and runs this test")
	}
	return path
}

// kcat runs kcat with args, stdin as its input, and returns its stdout.
func kcat(t *testing.T, path, stdin string, args ...string) string {
	t.Helper()
	out, stderr, err := runKcat(nil, path, stdin, args...)
	require.NoError(t, err, "kcat %s: %s", strings.Join(args, " "), stderr)
	return out
}

// runKcat runs kcat with args, stdin as its input, and env added to the
// environment, for at most 30 s, and returns its stdout and stderr.
func runKcat(env []string, path, stdin string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err = cmd.Run()
	return out.String(), errs.String(), err
}

// librdkafkaEnv, the directory of a librdkafka.so.1 newer than Debian's,
// is what scripts/librdkafka.sh builds and prints; .ci/run sets it.
const librdkafkaEnv = "PURGATORY_LIBRDKAFKA"

// newLibrdkafka returns the environment that makes kcat load the
// librdkafka of librdkafkaEnv, having checked that it does and that the
// library is at least 2.6.1 (the first whose SCRAM Kafka 4 accepts).
func newLibrdkafka(t *testing.T, path string) []string {
	t.Helper()
	dir := os.Getenv(librdkafkaEnv)
	if dir == "" {
		if os.Getenv(kcatEnv) == "1" {
			t.Fatalf("%s is not set, and %s=1 requires it: export %s=$(scripts/librdkafka.sh)", librdkafkaEnv, kcatEnv, librdkafkaEnv)
		}
		t.Skipf("%s is not set (export %s=$(scripts/librdkafka.sh)); CI sets it and runs this test", librdkafkaEnv, librdkafkaEnv)
	}
	env := []string{"LD_LIBRARY_PATH=" + dir}
	out, stderr, err := runKcat(env, path, "", "-V")
	require.NoError(t, err, "kcat -V: %s", stderr)
	m := regexp.MustCompile(`librdkafka (\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, "kcat -V names no librdkafka version: %s", out)
	v := [3]int{}
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	require.False(t, v[0] < 2 || v[0] == 2 && (v[1] < 6 || v[1] == 6 && v[2] < 1),
		"kcat loads librdkafka %s.%s.%s from %s: older than 2.6.1", m[1], m[2], m[3], dir)
	return env
}

// TestKcatSingleBroker: librdkafka produces with acks=all and idempotence
// on, reads it back, and reads it again through a consumer group.
func TestKcatSingleBroker(t *testing.T) {
	path := kcatPath(t)
	srv := startGroupBroker(t)
	b := srv.Addr().String()
	in := "one\ntwo\nthree\n"
	kcat(t, path, in, "-b", b, "-P", "-t", "rdk", "-X", "acks=all", "-X", "enable.idempotence=true")
	assert.Equal(t, in, kcat(t, path, "", "-b", b, "-C", "-t", "rdk", "-o", "beginning", "-e", "-q"))
	assert.Equal(t, in, kcat(t, path, "", "-b", b, "-G", "rdk-group", "rdk", "-o", "beginning", "-e", "-q"))
}

// TestKcatCluster: librdkafka, bootstrapped from a follower, produces with
// acks=all to a topic of replication factor 3 on three brokers, and reads
// it back from the leader; its metadata names every broker and the ISR.
func TestKcatCluster(t *testing.T) {
	path := kcatPath(t)
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.DefaultReplication = 3 })
	var in strings.Builder
	for i := range 100 {
		in.WriteString(strings.Repeat("x", 1+i%7) + "\n") // kcat skips empty lines
	}
	b := c.cfgs[1].Listener
	kcat(t, path, in.String(), "-b", b, "-P", "-t", "rdk", "-X", "acks=all", "-X", "enable.idempotence=true")
	assert.Equal(t, in.String(), kcat(t, path, "", "-b", c.cfgs[2].Listener, "-C", "-t", "rdk", "-o", "beginning", "-e", "-q"))
	assert.Equal(t, int64(100), c.replica(3, "rdk", 0).LogEnd, "the followers have it all")
	meta := kcat(t, path, "", "-b", b, "-L", "-t", "rdk")
	assert.Contains(t, meta, "3 brokers")
	assert.Contains(t, meta, "partition 0, leader 1, replicas: 1,2,3, isrs: 1,2,3")
}

// TestKcatGroupThroughCoordinatorChange: a librdkafka consumer group
// (kcat -G) consumes a topic and commits on exit; its coordinator, the
// leader of the group's offsets partition, is stopped; a new kcat of the
// group, bootstrapped from a survivor, finds the new coordinator and goes
// on from the committed offsets: exactly the records produced since.
func TestKcatGroupThroughCoordinatorChange(t *testing.T) {
	path := kcatPath(t)
	const group = "rdk-failover"
	c := startCluster(t, 3, func(cfg *server.Config) {
		cfg.DefaultReplication, cfg.OffsetsTopicPartitions = 3, 3
	})
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			b.WriteString("r" + strconv.Itoa(i) + "\n")
		}
		return b.String()
	}
	kcat(t, path, lines(0, 100), "-b", c.cfgs[0].Listener, "-P", "-t", "rdk", "-X", "acks=all")
	assert.Equal(t, lines(0, 100), kcat(t, path, "", "-b", c.cfgs[0].Listener, "-G", group, "rdk", "-o", "beginning", "-e", "-q"))

	idx := groupPartition(group, 3)
	coordinator := c.replica(1, "__consumer_offsets", idx).Leader
	require.Greater(t, coordinator, int32(0))
	c.stop(coordinator)
	survivor := coordinator%3 + 1
	require.Eventually(t, func() bool {
		ri, err := c.broker(survivor).Replica("__consumer_offsets", idx)
		return err == nil && ri.Leader > 0 && ri.Leader != coordinator
	}, 10*time.Second, 5*time.Millisecond, "the offsets partition has a new leader")

	b := c.cfgs[survivor-1].Listener
	kcat(t, path, lines(100, 150), "-b", b, "-P", "-t", "rdk", "-X", "acks=all")
	assert.Equal(t, lines(100, 150), kcat(t, path, "", "-b", b, "-G", group, "rdk", "-e", "-q"),
		"the group goes on from its commits, at the new coordinator")
}

// TestKcatConsumerProtocol: librdkafka's KIP-848 consumer
// (group.protocol=consumer, 2.10+) consumes through a consumer group whose
// assignment the broker computes, with each assignor the broker offers,
// commits on exit, and a second run goes on from the commits.
func TestKcatConsumerProtocol(t *testing.T) {
	path := kcatPath(t)
	env := newLibrdkafka(t, path)
	srv := start848Broker(t)
	admin := newClient(t, srv)
	b := srv.Addr().String()
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, stderr, err := runKcat(env, path, stdin, append([]string{"-b", b}, args...)...)
		require.NoError(t, err, "kcat %s: %s", strings.Join(args, " "), stderr)
		return out
	}
	for _, assignor := range []string{"uniform", "range"} {
		t.Run(assignor, func(t *testing.T) {
			topic, group := "rdk-848-"+assignor, "rdk-848-"+assignor
			run("one\ntwo\nthree\n", "-P", "-t", topic)
			consume := func() string {
				return run("", "-G", group, topic, "-X", "group.protocol=consumer", "-X", "group.remote.assignor="+assignor,
					"-X", "auto.offset.reset=earliest", "-e", "-q")
			}
			assert.Equal(t, "one\ntwo\nthree\n", consume())
			run("four\n", "-P", "-t", topic)
			assert.Equal(t, "four\n", consume(), "the group goes on from its commits")
			d := describe848(t, admin, group)
			assert.Equal(t, assignor, d.AssignorName, "the assignor librdkafka asked for")
			assert.Equal(t, "Empty", d.State, "kcat left on exit")
		})
	}
}
