package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// kafkajsEnv, set to 1, makes the kafkajs test fail rather than skip when
// node or test/kafkajs/node_modules is missing; .ci/run runs npm ci there
// and sets it.
const kafkajsEnv = "PURGATORY_REQUIRE_KAFKAJS"

// TestKafkajsTransactions: kafkajs, the Node.js client, commits and aborts
// transactions against the broker (test/kafkajs/txn.js), and its
// read_committed consumer reads the committed records only.
func TestKafkajsTransactions(t *testing.T) {
	node := nodePath(t)
	runTxnClient(t, "kafkajs", "kafkajs-txn", func(addr, topic string) []string {
		return []string{node, filepath.Join("kafkajs", "txn.js"), addr, topic}
	})
}

// nodePath returns node's path, once test/kafkajs has kafkajs installed.
func nodePath(t *testing.T) string {
	t.Helper()
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
	return node
}
