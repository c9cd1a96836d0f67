package test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// The transactions of the example broker, driven by kgo as an application
// drives them: commit and abort seen through read_committed and
// read_uncommitted consumers, a read_committed long poll woken by the
// commit marker, a producer fenced by a newer one with its transactional
// id, and a transaction past its timeout aborted by its coordinator.

// txnProducer returns a transactional kgo producer of srv.
func txnProducer(t *testing.T, seeds []string, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.TransactionalID(id),
		kgo.RecordRetries(20), kgo.TransactionTimeout(30 * time.Second)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// produceTxn produces values in one transaction and ends it.
func produceTxn(t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cl.BeginTransaction())
	for _, v := range values {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr())
	}
	require.NoError(t, cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
}

// consumeValues reads topic from the start until it has want records or the
// time is up, and returns their values.
func consumeValues(t *testing.T, seeds []string, topic string, want int, opts ...kgo.Opt) []string {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for len(got) < want && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func TestTransactionsCommitAndAbort(t *testing.T) {
	srv := startBroker(t)
	seeds := []string{srv.Addr().String()}
	admin := newClient(t, srv)
	createTopic(t, admin, "txn", 2)

	p := txnProducer(t, seeds, "txn-commit-abort")
	produceTxn(t, p, "txn", true, "c1", "c2", "c3")
	produceTxn(t, p, "txn", false, "a1", "a2")
	produceTxn(t, p, "txn", true, "c4")

	committed := consumeValues(t, seeds, "txn", 4, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	slices.Sort(committed)
	assert.Equal(t, []string{"c1", "c2", "c3", "c4"}, committed, "read_committed sees the committed records only")

	all := consumeValues(t, seeds, "txn", 6)
	slices.Sort(all)
	assert.Equal(t, []string{"a1", "a2", "c1", "c2", "c3", "c4"}, all, "read_uncommitted sees the aborted records too, never a marker")
}

// TestReadCommittedLongPollWokenByTheCommit has a read_committed consumer
// long-poll (5 s max wait) while a transaction's record is in the log: it
// does not get it while the transaction is open, and gets it within
// milliseconds of the commit, woken by the marker moving the last stable
// offset, not by its max wait.
func TestReadCommittedLongPollWokenByTheCommit(t *testing.T) {
	srv := startBroker(t)
	seeds := []string{srv.Addr().String()}
	admin := newClient(t, srv)
	createTopic(t, admin, "rc-long-poll", 1)

	consumer := newClient(t, srv, kgo.ConsumeTopics("rc-long-poll"), kgo.FetchMaxWait(5*time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	received := make(chan []string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			fs := consumer.PollFetches(ctx)
			if recs := fs.Records(); len(recs) > 0 {
				var vals []string
				for _, r := range recs {
					vals = append(vals, string(r.Value))
				}
				received <- vals
				return
			}
		}
	}()
	eventually(t, func() bool { return srv.PurgatorySizes()["Fetch"].Pending >= 1 }, "the consumer's fetch waits in the purgatory")

	p := txnProducer(t, seeds, "rc-long-poll")
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "rc-long-poll", Value: []byte("open")}).FirstErr())
	// The record is in the log and below the high watermark, the fetch
	// woken by its append: it must go back to waiting, not answer it.
	select {
	case vals := <-received:
		t.Fatalf("read_committed consumer got %q from an open transaction", vals)
	case <-time.After(300 * time.Millisecond):
	}
	eventually(t, func() bool { return srv.PurgatorySizes()["Fetch"].Pending >= 1 }, "the fetch waits again")

	start := time.Now()
	require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
	committed := time.Now()
	select {
	case vals := <-received:
		got := time.Now()
		t.Logf("committed record received %v after the commit was acknowledged, %v after EndTxn was sent",
			got.Sub(committed), got.Sub(start))
		assert.Equal(t, []string{"open"}, vals)
		assert.Less(t, got.Sub(committed), time.Second, "woken by the marker, not by the 5 s max wait")
	case <-ctx.Done():
		t.Fatal("the committed record never arrived")
	}
}

// TestTransactionalIDFencesTheOlderProducer has a second producer with the
// same transactional id take it over while the first has a transaction
// open: the open transaction is aborted and the first producer is fenced.
func TestTransactionalIDFencesTheOlderProducer(t *testing.T) {
	srv := startBroker(t)
	seeds := []string{srv.Addr().String()}
	admin := newClient(t, srv)
	createTopic(t, admin, "fenced", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	old := txnProducer(t, seeds, "fenced-id")
	require.NoError(t, old.BeginTransaction())
	require.NoError(t, old.ProduceSync(ctx, &kgo.Record{Topic: "fenced", Value: []byte("zombie")}).FirstErr())

	newer := txnProducer(t, seeds, "fenced-id")
	produceTxn(t, newer, "fenced", true, "fresh")

	err := old.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err, "the older producer cannot commit after being fenced")
	assert.True(t, errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch),
		"fenced: %v", err)

	assert.Equal(t, []string{"fresh"}, consumeValues(t, seeds, "fenced", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted())))
}

// TestTransactionTimeoutAbortsIt leaves a transaction open past its
// transaction.timeout.ms: its coordinator aborts it (a timer, not the
// client), so read_committed consumers read past it, and its producer is
// fenced.
func TestTransactionTimeoutAbortsIt(t *testing.T) {
	srv := startBroker(t)
	seeds := []string{srv.Addr().String()}
	admin := newClient(t, srv)
	createTopic(t, admin, "timeout", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	stuck := txnProducer(t, seeds, "timeout-id", kgo.TransactionTimeout(time.Second))
	require.NoError(t, stuck.BeginTransaction())
	require.NoError(t, stuck.ProduceSync(ctx, &kgo.Record{Topic: "timeout", Value: []byte("abandoned")}).FirstErr())

	plain := newClient(t, srv, kgo.DefaultProduceTopic("timeout"))
	require.NoError(t, plain.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr())

	// The abandoned transaction holds the last stable offset back until
	// its coordinator aborts it, a second after it began.
	got := consumeValues(t, seeds, "timeout", 1, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	assert.Equal(t, []string{"after"}, got, "read past the aborted transaction")

	err := stuck.EndTransaction(ctx, kgo.TryCommit)
	require.Error(t, err, "a producer whose transaction timed out is fenced")
}

// TestManyTransactionsAcrossPartitions commits and aborts transactions
// spanning several partitions and checks every committed record is read
// exactly once by read_committed, none of the aborted.
func TestManyTransactionsAcrossPartitions(t *testing.T) {
	srv := startBroker(t)
	seeds := []string{srv.Addr().String()}
	admin := newClient(t, srv)
	createTopic(t, admin, "many", 4)

	p := txnProducer(t, seeds, "many-id")
	want := 0
	for txn := range 20 {
		commit := txn%3 != 0
		var vals []string
		for i := range 10 {
			vals = append(vals, fmt.Sprintf("%d-%d-%v", txn, i, commit))
		}
		produceTxn(t, p, "many", commit, vals...)
		if commit {
			want += len(vals)
		}
	}
	got := consumeValues(t, seeds, "many", want, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := make(map[string]bool)
	for _, v := range got {
		assert.False(t, seen[v], "read once: %s", v)
		seen[v] = true
		assert.Contains(t, v, "true", "no aborted record: %s", v)
	}
	assert.Len(t, got, want)
}

// TestGroupTransactSessionExactlyOnce runs a consume-transform-produce
// pipeline (kgo's GroupTransactSession: read_committed input, offsets
// committed in the producer's transaction) on three brokers, aborting
// every fourth transaction on purpose: at the end every input record is
// in the read_committed output exactly once, and the aborted outputs,
// which are in the log, are never read.
func TestGroupTransactSessionExactlyOnce(t *testing.T) {
	c := startCluster(t, 3, func(cfg *server.Config) { cfg.MinInsyncReplicas = 2 })
	admin := c.client()
	c.createTopic(admin, "etl-in", 3, 3, nil)
	c.createTopic(admin, "etl-out", 3, 3, nil)
	runETL(t, c.seeds(), 2000, nil)
}

// runETL produces n records to etl-in, then moves them to etl-out with a
// GroupTransactSession, aborting every fourth transaction on purpose and
// calling during (if not nil) before each transaction ends, until every input is
// committed; then it checks that the read_committed output holds each
// input exactly once and that read_uncommitted sees the aborted outputs
// too.
func runETL(t *testing.T, seeds []string, n int, during func(round int)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	in, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("etl-in"), kgo.RecordRetries(20))
	require.NoError(t, err)
	defer in.Close()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprint(i))})
	}
	require.NoError(t, in.ProduceSync(ctx, recs...).FirstErr())

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID("etl"),
		kgo.ConsumerGroup("etl-group"), kgo.ConsumeTopics("etl-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordRetries(20),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.TransactionTimeout(20*time.Second))
	require.NoError(t, err)
	defer sess.Close()

	adm := kadm.NewClient(in)
	// caughtUp reports whether the group's committed offsets are at the
	// input's end: every input committed, whether or not this loop saw
	// each commit succeed (an EndTxn cut off by a broker's death may
	// have committed).
	caughtUp := func() bool {
		offs, err := adm.FetchOffsets(ctx, "etl-group")
		if err != nil {
			return false
		}
		ends, err := adm.ListEndOffsets(ctx, "etl-in")
		if err != nil {
			return false
		}
		all := true
		ends.Each(func(o kadm.ListedOffset) {
			c, ok := offs.Lookup("etl-in", o.Partition)
			all = all && ok && c.Err == nil && c.At == o.Offset
		})
		return all
	}

	done := make(map[string]bool)
	aborted := 0
	for round := 0; len(done) < n; round++ {
		require.NoError(t, ctx.Err(), "%d of %d inputs seen committed", len(done), n)
		pollCtx, pollCancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollRecords(pollCtx, 100)
		pollCancel()
		if fs.IsClientClosed() {
			t.Fatal("client closed")
		}
		var vals []string
		fs.EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
		if len(vals) == 0 {
			if caughtUp() {
				break
			}
			continue
		}
		require.NoError(t, sess.Begin())
		var failed atomic.Int32 // an application must abort a transaction whose produce failed
		for _, v := range vals {
			sess.Produce(ctx, &kgo.Record{Topic: "etl-out", Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
			})
		}
		// Sent before End decides (End drops what is still buffered
		// when it aborts), so that the aborted outputs are in the log
		// and a failed produce is known.
		if err := sess.Client().Flush(ctx); err != nil {
			t.Logf("round %d: flush: %v", round, err)
		}
		if during != nil {
			during(round) // the transaction is open: its records are in the log
		}
		abort := round%4 == 3 || failed.Load() > 0
		committed, err := sess.End(ctx, kgo.TransactionEndTry(!abort))
		if err != nil {
			t.Logf("round %d: the transaction ended with %v; going on", round, err)
			continue
		}
		if !committed {
			aborted++
			continue
		}
		for _, v := range vals {
			require.False(t, done[v], "input %s committed twice", v)
			done[v] = true
		}
	}
	t.Logf("%d inputs committed, %d transactions aborted", len(done), aborted)

	out := consumeValues(t, seeds, "etl-out", n, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := make(map[string]int)
	for _, v := range out {
		seen[v]++
	}
	missing := 0
	for i := range n {
		if seen[fmt.Sprint(i)] == 0 {
			if missing < 10 {
				t.Errorf("input %d is not in the read_committed output", i)
			}
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d inputs missing from the read_committed output", missing, n)
		logTxnState(t, adm, seeds, ctx)
	}
	for v, k := range seen {
		assert.Equal(t, 1, k, "input %s read %d times", v, k)
	}
	if aborted > 0 {
		all := consumeValues(t, seeds, "etl-out", n+1)
		assert.Greater(t, len(all), n, "the aborted outputs are in the log, read by read_uncommitted")
	}
}

// logTxnState logs, for a failing test, each etl-out partition's high
// watermark and last stable offset, and the etl transaction's state.
func logTxnState(t *testing.T, adm *kadm.Client, seeds []string, ctx context.Context) {
	t.Helper()
	hw, err1 := adm.ListEndOffsets(ctx, "etl-out")
	lso, err2 := adm.ListCommittedOffsets(ctx, "etl-out")
	t.Logf("etl-out end offsets %v (%v), last stable %v (%v)", hw, err1, lso, err2)
	d, err := adm.DescribeTransactions(ctx, "etl")
	t.Logf("transaction etl: %+v (%v)", d, err)
	p, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"etl-out": {0: {}, 1: {}, 2: {}}})
	t.Logf("producers of etl-out: %+v (%v)", p, err)
	if os.Getenv("TXN_DEBUG") == "" {
		return
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("etl-out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	if err != nil {
		return
	}
	defer cl.Close()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for dctx.Err() == nil {
		cl.PollFetches(dctx).EachRecord(func(r *kgo.Record) {
			if r.Attrs.IsControl() || string(r.Value) == "500" || string(r.Value) == "599" {
				t.Logf("p%d @%d control=%v txn=%v epoch=%d key=%x value=%q", r.Partition, r.Offset, r.Attrs.IsControl(),
					r.Attrs.IsTransactional(), r.ProducerEpoch, r.Key, r.Value)
			}
		})
	}
}

// TestTransactionAdminAPIs looks at an open and then a committed
// transaction as an operator does (KIP-664): DescribeTransactions and
// ListTransactions at its coordinator, DescribeProducers at its
// partition's leader.
func TestTransactionAdminAPIs(t *testing.T) {
	srv := startBroker(t)
	seeds := []string{srv.Addr().String()}
	admin := newClient(t, srv)
	createTopic(t, admin, "adm", 1)
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	p := txnProducer(t, seeds, "adm-id")
	require.NoError(t, p.BeginTransaction())
	require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Topic: "adm", Value: []byte("x")}).FirstErr())

	d, err := adm.DescribeTransactions(ctx, "adm-id")
	require.NoError(t, err)
	open := d["adm-id"]
	assert.Equal(t, "Ongoing", open.State)
	assert.Equal(t, int32(30000), open.TimeoutMillis)
	assert.Positive(t, open.StartTimestamp)
	assert.Contains(t, open.Topics, "adm")
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
	require.NoError(t, err)
	assert.Equal(t, "Ongoing", listed["adm-id"].State)
	assert.Equal(t, open.ProducerID, listed["adm-id"].ProducerID)
	none, err := adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
	require.NoError(t, err)
	assert.NotContains(t, none, "adm-id", "filtered by state")

	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"adm": {0: {}}})
	require.NoError(t, err)
	dp, ok := producers["adm"].Partitions[0].ActiveProducers[open.ProducerID]
	require.True(t, ok, "the transactional producer is described at its partition")
	assert.Equal(t, int64(0), dp.CurrentTxnStartOffset, "its open transaction began at offset 0")

	require.NoError(t, p.EndTransaction(ctx, kgo.TryCommit))
	require.Eventually(t, func() bool {
		d, err := adm.DescribeTransactions(ctx, "adm-id")
		return err == nil && d["adm-id"].State == "CompleteCommit"
	}, 10*time.Second, 10*time.Millisecond, "the transaction completes once its markers are written")
	producers, err = adm.DescribeProducers(ctx, kadm.TopicsSet{"adm": {0: {}}})
	require.NoError(t, err)
	assert.Equal(t, int64(-1), producers["adm"].Partitions[0].ActiveProducers[open.ProducerID].CurrentTxnStartOffset,
		"no open transaction after the commit marker")
}

// TestTransactionalProduceVerifiedByARemoteCoordinator: KIP-890 on
// three brokers, where a partition's leader is not its transaction's
// coordinator. Part 1: a Produce v11 batch for a partition never added to
// the transaction is refused TRANSACTION_ABORTABLE after the leader asks
// the coordinator (AddPartitionsToTxn, verify_only), which answers it so,
// and a v10 INVALID_TXN_STATE, which its clients know instead; once
// added, it is appended. Part 2: a Produce v12+ batch has the leader add its partition
// at the coordinator (AddPartitionsToTxn v5), and is appended without the
// producer's AddPartitionsToTxn.
func TestTransactionalProduceVerifiedByARemoteCoordinator(t *testing.T) {
	c := startCluster(t, 3)
	admin := c.client()
	v11 := kversion.Stable()
	v11.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	admin11 := c.client(kgo.MaxVersions(v11))
	v10 := kversion.Stable()
	v10.SetMaxKeyVersion(int16(kmsg.Produce), 10)
	admin10 := c.client(kgo.MaxVersions(v10))
	c.createTopic(admin, "verify", 6, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const id = "verify-id"
	coord := txnCoordinator(t, admin, id)

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
	var ir *kmsg.InitProducerIDResponse
	require.Eventually(t, func() bool {
		var err error
		ir, err = init.RequestWith(ctx, admin)
		return err == nil && ir.ErrorCode == 0
	}, 10*time.Second, 10*time.Millisecond)

	// Two partitions led by other brokers than the coordinator.
	var parts, leaders []int32
	for p := range int32(6) {
		if l := c.replica(1, "verify", p).Leader; l != coord && len(parts) < 2 {
			parts, leaders = append(parts, p), append(leaders, l)
		}
	}
	require.Len(t, parts, 2, "partitions led away from the coordinator")
	topicID := topicMetadata(t, admin, "verify").TopicID // kgo sends Produce v13, by topic id
	produce := func(cl *kgo.Client, i int) int16 {
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(id), -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = "verify", topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = parts[i]
		rp.Records = txnBatch(ir.ProducerID, ir.ProducerEpoch)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(leaders[i])))
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, kerr.TransactionAbortable.Code, produce(admin11, 0), "v11, not in the transaction: refused by broker %d after asking %d",
		leaders[0], coord)
	assert.Equal(t, kerr.InvalidTxnState.Code, produce(admin10, 0), "v10: the error its clients know")

	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, ir.ProducerID, ir.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "verify", Partitions: []int32{parts[0]}}}
	add.SetVersion(3)
	ar, err := add.RequestWith(ctx, admin) // kgo routes it to the coordinator
	require.NoError(t, err)
	code := int16(-1)
	if len(ar.Transactions) > 0 { // kgo sends the batched form (v4+) when offered
		code = ar.Transactions[0].Topics[0].Partitions[0].ErrorCode
	} else {
		code = ar.Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, int16(0), code)
	assert.Equal(t, int16(0), produce(admin11, 0), "added: appended")

	assert.Equal(t, int16(0), produce(admin, 1), "v13: added by broker %d at %d, appended", leaders[1], coord)
	d, err := kadm.NewClient(admin).DescribeTransactions(ctx, id)
	require.NoError(t, err)
	var in []int32
	for p := range d[id].Topics["verify"] {
		in = append(in, p)
	}
	assert.ElementsMatch(t, parts, in, "both partitions are in the transaction")
}

// txnBatch is a one-record transactional batch of producer pid at epoch,
// sequence 0, encoded with kmsg.
func txnBatch(pid int64, epoch int16) []byte {
	rec := kmsg.NewRecord()
	rec.Value = []byte("v")
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // the body, less its one-byte length
	recs := rec.AppendTo(nil)
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, LastOffsetDelta: 0,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: pid, ProducerEpoch: epoch, FirstSequence: 0,
		NumRecords: 1, Records: recs}
	raw := b.AppendTo(nil)
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}
