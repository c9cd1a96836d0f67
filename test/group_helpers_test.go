package test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/server"
)

// This file holds what the consumer group tests share: a group consumer
// that processes records on its own goroutine and commits the way that
// hands partitions over without re-reading or losing records, a ledger of
// what the group processed, a producer that spreads records over every
// partition, and DescribeGroups and OffsetFetch on the raw wire.

// startGroupBroker starts a broker whose empty groups wait only 50ms for
// more members before their first rebalance (Kafka waits 3s): the tests
// start their consumers together, and the ones that miss the first
// generation join the next.
func startGroupBroker(t *testing.T, tweak ...func(*server.Config)) *server.Server {
	t.Helper()
	return startBroker(t, append([]func(*server.Config){func(c *server.Config) {
		c.GroupInitialRebalance = 50 * time.Millisecond
	}}, tweak...)...)
}

// ledger counts, across a group, how often each record was processed, by
// its value (its identity), and which member processed it. With a limit it
// admits no more than limit records in all, so that a test can stop a
// group part way through a partition.
type ledger struct {
	limit int // 0: none; immutable

	mu       sync.Mutex // guards the following
	times    map[string]int
	total    int // records processed, duplicates included
	byMember map[string]int
	// Per partition: the first offset processed, and the offset after
	// the last one processed.
	first, next map[int32]int64
	// Per member, the partitions it processed records of.
	partitions map[string]map[int32]bool
}

func newLedger(limit int) *ledger {
	return &ledger{
		limit: limit, times: make(map[string]int), byMember: make(map[string]int),
		first: make(map[int32]int64), next: make(map[int32]int64), partitions: make(map[string]map[int32]bool),
	}
}

// process records that member processed recs, in order, and returns those
// it admitted: all of them, or the prefix that fits under the limit. A
// prefix of a poll is a prefix of each partition's records in it, so the
// records not admitted are exactly those after the marked ones.
func (l *ledger) process(member string, recs []*kgo.Record) []*kgo.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limit > 0 {
		recs = recs[:min(len(recs), max(l.limit-l.total, 0))]
	}
	for _, r := range recs {
		l.times[string(r.Value)]++
		l.total++
		l.byMember[member]++
		if _, ok := l.first[r.Partition]; !ok {
			l.first[r.Partition] = r.Offset
		}
		l.next[r.Partition] = max(l.next[r.Partition], r.Offset+1)
		if l.partitions[member] == nil {
			l.partitions[member] = make(map[int32]bool)
		}
		l.partitions[member][r.Partition] = true
	}
	return recs
}

// distinct returns how many different records were processed.
func (l *ledger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.times)
}

// processed returns how many records were processed, duplicates included.
func (l *ledger) processed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// duplicates returns the records processed more than once.
func (l *ledger) duplicates() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var dups []string
	for v, n := range l.times {
		if n > 1 {
			dups = append(dups, v)
		}
	}
	slices.Sort(dups)
	return dups
}

// missing returns the records of want that were never processed.
func (l *ledger) missing(want []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, v := range want {
		if l.times[v] == 0 {
			out = append(out, v)
		}
	}
	return out
}

// memberPartitions returns the partitions member processed records of.
func (l *ledger) memberPartitions(member string) []int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.partitions[member]))
}

// offsets returns, per partition, the first offset processed and the one
// after the last.
func (l *ledger) offsets() (first, next map[int32]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.first), maps.Clone(l.next)
}

// count returns how often the record of value v was processed.
func (l *ledger) count(v string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.times[v]
}

// counts returns the records processed by member.
func (l *ledger) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.byMember)
}

// groupConsumer is one member of a consumer group under test: a kgo group
// consumer whose goroutine polls, processes (counts each record in a
// ledger) and marks what it processed for committing. It commits the way
// franz-go documents for handing partitions over without re-reading
// processed records:
//
//   - BlockRebalanceOnPoll: no rebalance callback runs between a poll and
//     AllowRebalance, so a partition is never revoked while its records
//     are being processed, and a poll after a revoke returns none of its
//     records;
//   - AutoCommitMarks: only records marked after they were processed are
//     committed, periodically and on revoke, never records merely polled;
//   - OnPartitionsRevoked commits the marks synchronously
//     (CommitMarkedOffsets), before the member rejoins, so the member that
//     gets a partition next fetches the offset right after the last record
//     processed. (Setting OnPartitionsRevoked replaces kgo's default
//     revoke, which makes the same commit; the tests set it to watch the
//     callbacks.)
//
// Closing (Close) stops the goroutine first, so that nothing is processed
// after the member's last commit, then closes the client: a dynamic member
// revokes, commits and leaves the group; a static one revokes and commits
// but stays, until its session expires or its instance comes back.
type groupConsumer struct {
	t      *testing.T
	name   string
	cl     *kgo.Client // immutable, as everything up to mu
	ledger *ledger

	mu         sync.Mutex     // guards the following
	owned      map[int32]bool // the topic's partitions assigned now, as the callbacks said
	assigned   int            // OnPartitionsAssigned calls
	revoked    int            // OnPartitionsRevoked calls
	given      int            // partitions revoked, summed over the calls
	lost       int            // OnPartitionsLost calls
	commitErrs []error        // failed commits on revoke

	cancel    context.CancelFunc
	done      chan struct{} // closed when the goroutine returns
	closeOnce sync.Once
}

// groupOpts are the group options every test consumer has: heartbeats
// every 100ms, so that a member notices a rebalance within a tenth of a
// second instead of kgo's 3s; and a rebalance timeout of 15s, so that a
// member that never rejoins fails the test well inside its time limit
// instead of holding a rebalance for kgo's minute.
func groupOpts(group, topic string) []kgo.Opt {
	return []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(15 * time.Second),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.BlockRebalanceOnPoll(), kgo.AutoCommitMarks(), kgo.AutoCommitInterval(200 * time.Millisecond),
	}
}

// startGroupConsumer starts a member of group consuming topic into l, with
// groupOpts and opts (a balancer, an instance id, ...). It is closed when
// the test ends, if not before.
func startGroupConsumer(t *testing.T, srv *server.Server, name, group, topic string, l *ledger, opts ...kgo.Opt) *groupConsumer {
	t.Helper()
	c := &groupConsumer{t: t, name: name, ledger: l, owned: make(map[int32]bool), done: make(chan struct{})}
	opts = append(append(groupOpts(group, topic), opts...),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.assigned++
			for _, p := range m[topic] {
				c.owned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			err := cl.CommitMarkedOffsets(ctx)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.revoked++
			if err != nil {
				c.commitErrs = append(c.commitErrs, err)
			}
			c.given += len(m[topic])
			for _, p := range m[topic] {
				delete(c.owned, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.lost++
			for _, p := range m[topic] {
				delete(c.owned, p)
			}
		}),
	)
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(srv.Addr().String()),
		kgo.WithLogger(kgo.BasicLogger(testWriter{t}, kgo.LogLevelWarn, func() string { return name + ": " })),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	c.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.run(ctx)
	t.Cleanup(c.Close)
	return c
}

// run polls, processes and marks until ctx ends or the client closes.
func (c *groupConsumer) run(ctx context.Context) {
	defer close(c.done)
	for {
		fs := c.cl.PollRecords(ctx, 200)
		if ctx.Err() != nil || fs.IsClientClosed() {
			// Whatever this poll returned was not processed, nor marked:
			// the next owner of its partitions reads it.
			c.cl.AllowRebalance()
			return
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				c.t.Errorf("%s: fetching %s-%d: %v", c.name, topic, p, err)
			}
		})
		done := c.ledger.process(c.name, fs.Records())
		c.cl.MarkCommitRecords(done...)
		c.cl.AllowRebalance()
	}
}

// Close stops processing and closes the client (see groupConsumer). It is
// idempotent.
func (c *groupConsumer) Close() {
	c.closeOnce.Do(func() {
		c.cancel()
		<-c.done
		c.cl.Close()
	})
}

// partitions returns the partitions the member owns now, sorted.
func (c *groupConsumer) partitions() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.owned))
}

// partitionsRevoked returns how many partitions the member gave up.
func (c *groupConsumer) partitionsRevoked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.given
}

// callbacks returns how many assign, revoke and lose callbacks ran.
func (c *groupConsumer) callbacks() (assigned, revoked, lost int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.assigned, c.revoked, c.lost
}

// checkCommits asserts that every commit on revoke succeeded and no
// partition was lost: a failed handover commit is how duplicates happen.
func (c *groupConsumer) checkCommits() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Empty(c.t, c.commitErrs, "%s: commits on revoke", c.name)
	assert.Zero(c.t, c.lost, "%s: partitions lost", c.name)
}

// testWriter sends kgo's log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// waitBalanced waits until the group is Stable with exactly the members
// cs and they own the topic's partitions between them, each an equal
// share, none twice, and returns how long that took.
func waitBalanced(t *testing.T, admin *kgo.Client, group string, partitions int, cs ...*groupConsumer) time.Duration {
	t.Helper()
	start := time.Now()
	eventually(t, func() bool {
		if !sharedEqually(partitions, cs...) {
			return false
		}
		d := describeGroup(t, admin, group)
		return d.State == "Stable" && len(d.Members) == len(cs)
	}, fmt.Sprintf("%d members share %d partitions", len(cs), partitions))
	return time.Since(start)
}

// sharedEqually reports whether the members cs own the topic's
// partitions between them, each an equal share, none twice, as their
// callbacks said.
func sharedEqually(partitions int, cs ...*groupConsumer) bool {
	all := make(map[int32]bool)
	for _, c := range cs {
		ps := c.partitions()
		if len(ps) != partitions/len(cs) {
			return false
		}
		for _, p := range ps {
			all[p] = true
		}
	}
	return len(all) == partitions
}

// waitGroupWaits waits until the coordinator's purgatories hold what a
// set of Stable groups with members members in all should: one session
// per member in the Heartbeat purgatory, and nothing in the Rebalance
// purgatory (every JoinGroup answered, every SyncGroup received).
func waitGroupWaits(t *testing.T, srv *server.Server, members int) {
	t.Helper()
	var last map[string]server.PurgatorySize
	require.Eventually(t, func() bool {
		last = srv.PurgatorySizes()
		return last["Heartbeat"].Pending == members && last["Rebalance"].Pending == 0
	}, 10*time.Second, 5*time.Millisecond, "one session per member, no rebalance waiting; last seen %+v", &last)
}

// describeGroup returns the group as DescribeGroups shows it.
func describeGroup(t *testing.T, cl *kgo.Client, group string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Groups, 1)
	require.NoError(t, kerr.ErrorForCode(resp.Groups[0].ErrorCode))
	return resp.Groups[0]
}

// committedOffsets returns the group's committed offsets of topic's
// partitions (-1: none).
func committedOffsets(t *testing.T, cl *kgo.Client, group, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	out, err := fetchGroupOffsets(cl, group, topic, partitions, 5*time.Second)
	require.NoError(t, err)
	return out
}

// fetchGroupOffsets asks r (a kgo client, which finds the coordinator, or
// one broker of it) for group's committed offsets of topic's partitions
// (-1: none), and fails on any error: the request's, the group's or a
// partition's (a coordinator that just stopped, say).
func fetchGroupOffsets(r kmsg.Requestor, group, topic string, partitions int32, timeout time.Duration) (map[int32]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest() // the groups form: kgo sends v8+
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic = topic
	for p := range partitions {
		rt.Partitions = append(rt.Partitions, p)
	}
	rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
	req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		return nil, err
	}
	if len(resp.Groups) != 1 {
		return nil, fmt.Errorf("%d groups answered, not 1", len(resp.Groups))
	}
	if err := kerr.ErrorForCode(resp.Groups[0].ErrorCode); err != nil {
		return nil, err
	}
	out := make(map[int32]int64)
	for _, t := range resp.Groups[0].Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("partition %d: %w", p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}

// spreadProducer produces to one topic, record i to partition i modulo
// the partition count, with value "r" and i: the record's identity.
type spreadProducer struct {
	t          *testing.T
	cl         *kgo.Client // immutable, as everything up to mu
	partitions int

	mu   sync.Mutex // guards the following
	next int        // the next record's index
	sent []string   // the values acknowledged
}

func newSpreadProducer(t *testing.T, srv *server.Server, topic string, partitions int) *spreadProducer {
	t.Helper()
	cl := newClient(t, srv, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return &spreadProducer{t: t, cl: cl, partitions: partitions}
}

// produce produces the next n records and waits for their acknowledgements;
// it returns their values.
func (p *spreadProducer) produce(n int) []string {
	p.t.Helper()
	vals, err := p.try(n)
	require.NoError(p.t, err)
	return vals
}

func (p *spreadProducer) try(n int) ([]string, error) {
	recs := make([]*kgo.Record, n)
	vals := make([]string, n)
	p.mu.Lock()
	for i := range recs {
		vals[i] = fmt.Sprintf("r%07d", p.next)
		recs[i] = &kgo.Record{Value: []byte(vals[i]), Partition: int32(p.next % p.partitions)}
		p.next++
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.sent = append(p.sent, vals...)
	p.mu.Unlock()
	return vals, nil
}

// background produces batches of one record per partition, one after
// the other, until the returned stop is called; stop returns every value
// acknowledged, in the foreground too.
func (p *spreadProducer) background() (stop func() []string) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := p.try(p.partitions); err != nil {
				p.t.Errorf("producing in the background: %v", err)
				return
			}
		}
	}()
	return func() []string {
		close(done)
		<-stopped
		p.mu.Lock()
		defer p.mu.Unlock()
		return slices.Clone(p.sent)
	}
}

// groupPartition is Kafka's partition of group among n partitions of
// __consumer_offsets: abs(String.hashCode) % n, written here again from
// Java's definition (UTF-16 code units, int32 arithmetic) so that the
// broker's is checked against it, not against itself.
func groupPartition(group string, n int) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	return int32(int(h&0x7fffffff) % n)
}
