package test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/share"
	"github.com/gopurgatory/purgatory/examples/broker/sharestate"
)

// shareLockDuration is the share group's share.record.lock.duration.ms in
// TestShareCoordinatorKill9: Kafka's minimum.
const shareLockDuration = 15 * time.Second

// TestShareCoordinatorKill9: a share group of three franz-go consumers
// reads a partition of three broker binaries (each with its log dir)
// while a producer writes to it. One consumer is killed mid-batch: it
// accepts half of a batch and its connections are cut at once, as a
// process killed with SIGKILL leaves them, so that what it holds stays
// acquired until its acquisition locks expire. Then the broker of the
// share partition's share coordinator (FindCoordinator key type 2), which
// the test picks not to lead the partition, is killed with SIGKILL. Every
// record is delivered and, once the load stops, acknowledged (the share
// partition's start offset reaches the log's end, as the group's
// coordinator describes it); no delivery is past the delivery count
// limit; and the records the killed consumer held are delivered again
// to the others, no earlier than the lock duration after it joined.
func TestShareCoordinatorKill9(t *testing.T) {
	const topic = "share-kill9"
	c := startProcessCluster(t, append([]string{"--share.coordinator.state.topic.num.partitions", "3"},
		groupFailoverArgs...)...)
	admin := c.client()
	c.createTopic(admin, topic, 1, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// A group whose share coordinator for the partition is not the
	// partition's leader: the kill then moves the state, not the
	// partition, whose locks go on at their leader.
	mt, ok := c.metadata(admin, 1, topic)
	require.True(t, ok)
	leader := mt.Partitions[0].Leader
	var group string
	var coordinator int32
	for i := 0; coordinator <= 0 || coordinator == leader; i++ {
		require.Less(t, i, 30, "a group whose share coordinator is not broker %d, the leader", leader)
		group = fmt.Sprintf("share-kill9-%d", i)
		key := sharestate.Key{Group: group, Topic: mt.TopicID, Partition: 0}.String()
		c.eventually(func() bool { coordinator = findShareCoordinator(admin, key); return coordinator > 0 },
			30*time.Second, 20*time.Millisecond, "the share key has a coordinator")
	}
	t.Logf("group %s: partition led by broker %d, share coordinator broker %d", group, leader, coordinator)
	setShareGroupConfigs(t, c, admin, leader, group, map[string]string{
		"share.auto.offset.reset":       "earliest",
		"share.record.lock.duration.ms": strconv.Itoa(int(shareLockDuration.Milliseconds())),
	})

	load := startPacedLoad(c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())), topic)
	deliveries := newShareDeliveries()
	pollCtx, stopPolling := context.WithCancel(ctx)
	var polling sync.WaitGroup
	defer polling.Wait()
	defer stopPolling()
	for i := range 2 {
		cl := c.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond))
		polling.Add(1)
		go func() {
			defer polling.Done()
			for pollCtx.Err() == nil {
				fs := cl.PollFetches(pollCtx)
				deliveries.note(i, fs.Records())
				for _, r := range fs.Records() {
					r.Ack(kgo.AckAccept)
				}
			}
		}()
	}
	c.eventually(func() bool { return deliveries.count() >= 200 }, 30*time.Second, 20*time.Millisecond,
		"the two consumers consume")

	// The third joins, polls a batch, accepts its first half, and is cut
	// off: its acknowledgements most likely never leave it, and nothing
	// it holds is released until its locks expire.
	cut := &cuttableDialer{}
	joined := time.Now() // before it can acquire anything
	victim := c.client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.Dialer(cut.dial))
	t.Cleanup(cut.heal) // before the client's Close (cleanups run last first): it leaves the group
	var held []*kgo.Record
	for len(held) == 0 {
		fs := victim.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "the third consumer gets records")
		held = fs.Records()
	}
	accepted, unacked := held[:len(held)/2], held[len(held)/2:]
	for _, r := range accepted {
		r.Ack(kgo.AckAccept)
	}
	cut.kill()
	deliveries.note(-1, held)
	t.Logf("the third consumer cut off with %d records polled, %d of them not acknowledged (offsets %d to %d), %v after it joined",
		len(held), len(unacked), unacked[0].Offset, unacked[len(unacked)-1].Offset, time.Since(joined).Round(time.Millisecond))

	require.NoError(t, c.procs[coordinator].cmd.Process.Signal(syscall.SIGKILL))
	t.Logf("killed broker %d, the share coordinator", coordinator)

	// What the third consumer held comes back once its locks expire (the
	// half it accepted too, unless its acknowledgement left it in time).
	c.eventually(func() bool { return deliveries.redelivered(unacked) }, shareLockDuration+30*time.Second,
		50*time.Millisecond, "the records the third consumer held are delivered again")
	first, _ := deliveries.firstTo(unacked[0].Offset)
	t.Logf("the killed consumer's records delivered again %v after it joined", first.Sub(joined).Round(time.Millisecond))
	for _, r := range unacked {
		at, n := deliveries.firstTo(r.Offset)
		assert.GreaterOrEqual(t, at.Sub(joined), shareLockDuration,
			"offset %d held by the killed consumer: not delivered again before its lock expired", r.Offset)
		assert.GreaterOrEqual(t, n, int32(2), "offset %d: its delivery count counts the killed consumer's", r.Offset)
	}

	end := load.stopAndFlush(t)
	c.eventually(func() bool { return deliveries.covers(end) }, 30*time.Second, 20*time.Millisecond,
		"every record is delivered")
	groupCoordinator := int32(-1)
	c.eventually(func() bool {
		alive := coordinator%3 + 1
		if groupCoordinator = c.findCoordinator(admin, alive, group); groupCoordinator <= 0 {
			return false
		}
		start, ok := shareStartOffset(admin, groupCoordinator, group, topic)
		return ok && start == end
	}, 30*time.Second, 50*time.Millisecond, "the share partition's start offset reaches the log's end: every record acknowledged")
	assert.LessOrEqual(t, deliveries.maxCount(), int32(share.DefaultDeliveryLimit), "no delivery past the delivery count limit")
	// No record was delivered as often as the limit, so none was archived
	// at it: the start offset at the end means every record accepted.
	assert.Less(t, deliveries.maxCount(), int32(share.DefaultDeliveryLimit), "no record archived at the limit")
	t.Logf("%d records, %d deliveries, the most to one record %d", end, deliveries.total(), deliveries.maxCount())
}

// findShareCoordinator returns the share coordinator of key (KIP-932's
// "group:topicId:partition", FindCoordinator key type 2), or -1 while the
// cluster answers an error.
func findShareCoordinator(cl *kgo.Client, key string) int32 {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = 2, key, []string{key}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		return -1
	}
	return resp.Coordinators[0].NodeID
}

// setShareGroupConfigs sets group's configs, and waits until broker id
// (the partition's leader, which applies them) describes them.
func setShareGroupConfigs(t *testing.T, c *processCluster, cl *kgo.Client, id int32, group string, configs map[string]string) {
	t.Helper()
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		res.Configs = append(res.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	alter.Resources = append(alter.Resources, res)
	c.eventually(func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := alter.RequestWith(ctx, cl)
		return err == nil && resp.Resources[0].ErrorCode == 0
	}, 30*time.Second, 50*time.Millisecond, "the group's configs are set")
	describe := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	describe.Resources = append(describe.Resources, rr)
	c.eventually(func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := describe.RequestWith(ctx, cl.Broker(int(id)))
		if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			return false
		}
		got := 0
		for _, cfg := range resp.Resources[0].Configs {
			if v, ok := configs[cfg.Name]; ok && cfg.Value != nil && *cfg.Value == v {
				got++
			}
		}
		return got == len(configs)
	}, 30*time.Second, 20*time.Millisecond, fmt.Sprintf("broker %d has the group's configs", id))
}

// shareStartOffset returns the share-partition start offset of group on
// partition 0 of topic, as broker id (the group's coordinator) describes
// it (DescribeShareGroupOffsets).
func shareStartOffset(cl *kgo.Client, id int32, group, topic string) (int64, bool) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}
	req.Groups = append(req.Groups, g)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 ||
		len(resp.Groups[0].Topics[0].Partitions) != 1 || resp.Groups[0].Topics[0].Partitions[0].ErrorCode != 0 {
		return 0, false
	}
	return resp.Groups[0].Topics[0].Partitions[0].StartOffset, true
}

// cuttableDialer dials a client's connections until kill closes them all
// and refuses new ones, as a process killed with SIGKILL leaves its
// connections; heal lets it dial again.
type cuttableDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cuttableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("cut off")
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, conn)
	}
	return conn, err
}

func (d *cuttableDialer) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, conn := range d.conns {
		_ = conn.Close()
	}
	d.conns = nil
}

func (d *cuttableDialer) heal() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = false
}

// shareDelivery is one record delivered to one consumer.
type shareDelivery struct {
	consumer int // -1: the killed one
	count    int32
	at       time.Time
}

// shareDeliveries are the deliveries of a partition's records, by offset.
type shareDeliveries struct {
	mu sync.Mutex
	by map[int64][]shareDelivery
	n  int
}

func newShareDeliveries() *shareDeliveries {
	return &shareDeliveries{by: make(map[int64][]shareDelivery)}
}

func (d *shareDeliveries) note(consumer int, rs []*kgo.Record) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range rs {
		d.by[r.Offset] = append(d.by[r.Offset], shareDelivery{consumer, r.DeliveryCount(), now})
		d.n++
	}
}

func (d *shareDeliveries) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.by)
}

func (d *shareDeliveries) total() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// redelivered reports whether each of rs was delivered to a consumer
// other than the killed one after it.
func (d *shareDeliveries) redelivered(rs []*kgo.Record) bool {
	for _, r := range rs {
		if at, _ := d.firstTo(r.Offset); at.IsZero() {
			return false
		}
	}
	return true
}

// firstTo returns when off was first delivered to a consumer other than
// the killed one, and its delivery count then.
func (d *shareDeliveries) firstTo(off int64) (time.Time, int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dl := range d.by[off] {
		if dl.consumer >= 0 {
			return dl.at, dl.count
		}
	}
	return time.Time{}, 0
}

// covers reports whether every offset below end was delivered.
func (d *shareDeliveries) covers(end int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for off := range end {
		if len(d.by[off]) == 0 {
			return false
		}
	}
	return true
}

func (d *shareDeliveries) maxCount() int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := int32(0)
	for _, dls := range d.by {
		for _, dl := range dls {
			n = max(n, dl.count)
		}
	}
	return n
}

// pacedLoad produces a record every 5ms, acks=all, until stopped: load a
// share group keeps up with, so that the test ends when the records do.
type pacedLoad struct {
	prod  *kgo.Client
	topic string
	stop  chan struct{}
	done  chan struct{}
}

func startPacedLoad(prod *kgo.Client, topic string) *pacedLoad {
	l := &pacedLoad{prod: prod, topic: topic, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			l.prod.Produce(context.Background(), kgo.StringRecord(strconv.Itoa(i)), func(*kgo.Record, error) {})
		}
	}()
	return l
}

// stopAndFlush stops the load, waits for every record to be answered, and
// returns the partition's end offset.
func (l *pacedLoad) stopAndFlush(t *testing.T) int64 {
	t.Helper()
	close(l.stop)
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, l.prod.Flush(ctx), "every record is answered")
	return endOffsets(t, l.prod, l.topic, 1)[0]
}
