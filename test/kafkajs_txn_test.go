package test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kafkajsEnv, set to 1, makes the kafkajs test fail rather than skip when
// node or test/kafkajs/node_modules is missing; .ci/run runs npm ci there
// and sets it.
const kafkajsEnv = "PURGATORY_REQUIRE_KAFKAJS"

// TestKafkajsTransactions: kafkajs, the Node.js client, commits and aborts
// transactions against the broker (test/kafkajs/txn.js), and its
// read_committed consumer reads the committed records only.
func TestKafkajsTransactions(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("kafkajs", "node_modules", "kafkajs"))
	}
	if err != nil {
		if os.Getenv(kafkajsEnv) == "1" {
			t.Fatalf("node or kafkajs is missing (%v), and %s=1 requires them: npm ci --prefix test/kafkajs", err, kafkajsEnv)
		}
		t.Skipf("node or kafkajs is missing (npm ci --prefix test/kafkajs); CI installs them and runs this test: %v", err)
	}
	srv := startGroupBroker(t)
	admin := newClient(t, srv)
	createTopic(t, admin, "kafkajs-txn", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("kafkajs", "txn.js"), srv.Addr().String(), "kafkajs-txn")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "kafkajs: %s", &stderr)
	got := strings.Split(strings.TrimSpace(stdout.String()), ",")
	slices.Sort(got)
	assert.Equal(t, []string{"c1", "c2", "c3"}, got, "read_committed reads the committed records only")

	all := consumeValues(t, []string{srv.Addr().String()}, "kafkajs-txn", 4)
	slices.Sort(all)
	assert.Equal(t, []string{"a1", "c1", "c2", "c3"}, all, "the aborted record is in the log")
}
