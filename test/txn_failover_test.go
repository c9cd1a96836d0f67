package test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionCoordinatorKill9 runs the consume-transform-produce
// pipeline of TestGroupTransactSessionExactlyOnce on three broker
// processes with log dirs and kills -9 the transaction coordinator of its
// transactional id while a transaction is open, then restarts it: a new
// coordinator loads the id's state from __transaction_state (completing a
// transaction it finds prepared by sending its markers again), the
// producer carries on there, and every input is in the read_committed
// output exactly once.
func TestTransactionCoordinatorKill9(t *testing.T) {
	c, admin := startETLCluster(t)

	killed := int32(-1)
	runETL(t, c.seeds(), 3000, func(round int) {
		switch {
		case round == 5:
			killed = txnCoordinator(t, admin, "etl")
			t.Logf("round %d: killing broker %d, the transaction coordinator of etl", round, killed)
			require.NoError(t, c.procs[killed].cmd.Process.Signal(syscall.SIGKILL))
		case round == 15 && killed > 0:
			t.Logf("round %d: restarting broker %d", round, killed)
			c.restart(killed)
		}
	})
	require.Positive(t, killed, "the run lasted long enough to kill the coordinator")
}

// txnCoordinator returns the node id of id's transaction coordinator.
func txnCoordinator(t *testing.T, cl interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}, id string) int32 {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 1, id, []string{id}
	var node int32 = -1
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return false
		}
		if len(resp.Coordinators) > 0 {
			node = resp.Coordinators[0].NodeID
			return resp.Coordinators[0].ErrorCode == 0
		}
		node = resp.NodeID
		return resp.ErrorCode == 0
	}, 10*time.Second, 20*time.Millisecond, "%s has a transaction coordinator", id)
	return node
}

// TestTransactionPartitionLeaderKill9 is TestTransactionCoordinatorKill9
// with the leader of an output partition killed instead (one that is not
// the transaction's coordinator, when there is one): the markers of the
// transactions under way are written again to its new leader, and every
// input is still in the read_committed output exactly once.
func TestTransactionPartitionLeaderKill9(t *testing.T) {
	c, admin := startETLCluster(t)

	killed := int32(-1)
	runETL(t, c.seeds(), 3000, func(round int) {
		switch {
		case round == 5:
			coord := txnCoordinator(t, admin, "etl")
			md, _ := c.metadata(admin, coord, "etl-out")
			for _, p := range md.Partitions {
				if p.Leader != coord {
					killed = p.Leader
					break
				}
			}
			if killed < 0 {
				killed = md.Partitions[0].Leader
			}
			t.Logf("round %d: killing broker %d, a leader of etl-out (the coordinator is %d)", round, killed, coord)
			require.NoError(t, c.procs[killed].cmd.Process.Signal(syscall.SIGKILL))
		case round == 15 && killed > 0:
			t.Logf("round %d: restarting broker %d", round, killed)
			c.restart(killed)
		}
	})
	require.Positive(t, killed, "the run lasted long enough to kill a leader")
}

// startETLCluster starts three broker processes with log dirs, quick to
// fence a dead one, min.insync.replicas 2, and runETL's topics.
func startETLCluster(t *testing.T) (*processCluster, *kgo.Client) {
	t.Helper()
	c := startProcessCluster(t, "--broker.heartbeat.interval.ms", "250", "--broker.session.timeout.ms", "1500",
		"--controller.quorum.election.timeout.ms", "300", "--replica.fetch.backoff.ms", "50",
		"--min.insync.replicas", "2", "--group.initial.rebalance.delay.ms", "0")
	admin := c.client()
	c.createTopic(admin, "etl-in", 3, nil)
	c.createTopic(admin, "etl-out", 3, nil)
	return c, admin
}
