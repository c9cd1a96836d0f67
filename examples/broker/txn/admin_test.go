package txn

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestDescribe: DescribeTransactions' view of an id, as Kafka fills it.
func TestDescribe(t *testing.T) {
	e := newEnv(t, 0)
	pid, epoch := e.initNow(t, "tx")
	e.clk.Advance(time.Second)
	require.Nil(t, e.add("tx", pid, epoch, tp("b", 0), tp("a", 2), tp("a", 1)).one(t))
	got := e.c.Describe([]string{"tx", "nope", ""})
	require.Len(t, got, 3)
	assert.Equal(t, Description{TxnID: "tx", State: Ongoing, ProducerID: pid, ProducerEpoch: epoch, Timeout: testTimeout,
		Started: time.UnixMilli(wallStart.Add(time.Second).UnixMilli()), Partitions: []TopicPartition{tp("a", 1), tp("a", 2), tp("b", 0)}}, got[0])
	assert.Equal(t, Description{TxnID: "nope", Err: kerr.TransactionalIDNotFound}, got[1])
	assert.Equal(t, Description{TxnID: "", Err: kerr.TransactionalIDNotFound}, got[2])
	assert.Equal(t, "Ongoing", got[0].State.String(), "Kafka's name")
}

// TestList: ListTransactions' filters, as Kafka's listTransactionStates
// applies them.
func TestList(t *testing.T) {
	e := newEnv(t, 2)
	e.timeout = 10 * time.Minute
	pe, _ := e.initNow(t, "empty")
	po, _ := e.ongoing(t, "ongoing", tp("t", 0))
	e.clk.Advance(time.Minute)
	pr, _ := e.ongoing(t, "recent", tp("t", 0))
	pc, ec := e.ongoing(t, "committed", tp("t", 0))
	require.Nil(t, e.end("committed", pc, ec, true).one(t))
	e.clk.Advance(time.Second)

	all := []Listing{{"committed", pc, CompleteCommit}, {"empty", pe, Empty}, {"ongoing", po, Ongoing}, {"recent", pr, Ongoing}}
	for _, tt := range []struct {
		name    string
		states  []string
		pids    []int64
		min     time.Duration
		want    []Listing
		unknown []string
	}{
		{"all", nil, nil, -1, all, nil},
		{"by state", []string{"Ongoing", "Empty"}, nil, -1, []Listing{all[1], all[2], all[3]}, nil},
		{"unknown states", []string{"Ongoing", "Bogus", "ongoing"}, nil, -1, []Listing{all[2], all[3]}, []string{"Bogus", "ongoing"}},
		{"only unknown states: none", []string{"Bogus"}, nil, -1, nil, []string{"Bogus"}},
		{"by producer id", nil, []int64{po, pc}, -1, []Listing{all[0], all[2]}, nil},
		// Kafka's duration filter: running longer than it; an id with
		// no transaction (start -1) passes.
		{"longer than 30s", []string{"Ongoing", "Empty"}, nil, 30 * time.Second, []Listing{all[1], all[2]}, nil},
		{"longer than 2m", []string{"Ongoing"}, nil, 2 * time.Minute, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, unknown := e.c.List(tt.states, tt.pids, tt.min)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.unknown, unknown)
		})
	}
}
