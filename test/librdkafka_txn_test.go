package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pyRdkafkaEnv, set to 1, makes the librdkafka transaction test fail
// rather than skip when Debian's python3-confluent-kafka (confluent-kafka
// on librdkafka) is missing; .ci/run installs it and sets it.
const pyRdkafkaEnv = "PURGATORY_REQUIRE_PY_RDKAFKA"

// pyRdkafka is the Python of Debian's python3-confluent-kafka package.
const pyRdkafka = "/usr/bin/python3"

// rdkafkaTxnScript commits, aborts and commits again a transaction with
// confluent-kafka's producer (init_transactions, begin, commit, abort),
// then reads the topic with a read_committed consumer until it has three
// records and for a second more, and prints what it read.
const rdkafkaTxnScript = `
import sys, time
import confluent_kafka as ck
bootstrap, topic = sys.argv[1], sys.argv[2]
p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "rdk-txn"})
p.init_transactions(30)
p.begin_transaction(); p.produce(topic, b"c1"); p.produce(topic, b"c2"); p.commit_transaction(30)
p.begin_transaction(); p.produce(topic, b"a1"); p.flush(30); p.abort_transaction(30)
p.begin_transaction(); p.produce(topic, b"c3"); p.commit_transaction(30)
c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "rdk-txn-group", "auto.offset.reset": "earliest",
                 "isolation.level": "read_committed", "enable.auto.commit": False})
c.subscribe([topic])
got, deadline, extra = [], time.time() + 20, None
while time.time() < deadline and (extra is None or time.time() < extra):
    m = c.poll(0.2)
    if m is not None and not m.error():
        got.append(m.value().decode())
    if len(got) >= 3 and extra is None:
        extra = time.time() + 1
c.close()
print(",".join(got))
`

// TestLibrdkafkaTransactions: librdkafka's transactional producer (through
// confluent-kafka for Python) commits and aborts against the broker, and
// its read_committed consumer reads the committed records only, the
// aborted one being in the log.
func TestLibrdkafkaTransactions(t *testing.T) {
	if _, err := os.Stat(pyRdkafka); err != nil || exec.Command(pyRdkafka, "-c", "import confluent_kafka").Run() != nil {
		if os.Getenv(pyRdkafkaEnv) == "1" {
			t.Fatalf("confluent-kafka for Python is not installed, and %s=1 requires it: apt-get install python3-confluent-kafka", pyRdkafkaEnv)
		}
		t.Skip("confluent-kafka for Python is not installed (apt-get install python3-confluent-kafka); CI installs it and runs this test")
	}
	runTxnClient(t, "confluent-kafka", "rdk-txn", func(addr, topic string) []string {
		return []string{pyRdkafka, "-c", rdkafkaTxnScript, addr, topic}
	})
}

// runTxnClient runs another client family's program (argv, given the
// broker's address and the topic) against a broker with a one-partition
// topic: it commits c1 and c2, aborts a1, commits c3, and prints, comma
// separated, what its read_committed consumer read. It checks that this
// is the committed records only, and that the aborted one is in the log.
func runTxnClient(t *testing.T, name, topic string, argv func(addr, topic string) []string) {
	t.Helper()
	srv := startGroupBroker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := argv(srv.Addr().String(), topic)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "%s: %s", name, &stderr)
	got := strings.Split(strings.TrimSpace(stdout.String()), ",")
	slices.Sort(got)
	assert.Equal(t, []string{"c1", "c2", "c3"}, got, "read_committed reads the committed records only")

	all := consumeValues(t, []string{srv.Addr().String()}, topic, 4)
	slices.Sort(all)
	assert.Equal(t, []string{"a1", "c1", "c2", "c3"}, all, "the aborted record is in the log")
}
