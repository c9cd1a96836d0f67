package test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// overlapWatch samples, every few milliseconds until stopped, the
// partitions each consumer owns as its callbacks say, and records any
// partition two of them own at once.
type overlapWatch struct {
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex // guards the following
	overlaps []string
}

func watchOverlaps(cs ...*groupConsumer) *overlapWatch {
	w := &overlapWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			owner := map[int32]string{}
			for _, c := range cs {
				for _, p := range c.partitions() {
					if o, dup := owner[p]; dup {
						w.mu.Lock()
						w.overlaps = append(w.overlaps, fmt.Sprintf("partition %d owned by %s and %s", p, o, c.name))
						w.mu.Unlock()
					}
					owner[p] = c.name
				}
			}
		}
	}()
	return w
}

// finish stops the watch and returns the overlaps it saw.
func (w *overlapWatch) finish() []string {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.overlaps
}

// TestClassicGroupUpgrade is KIP-848's online upgrade: two classic
// consumers (kgo's default, cooperative-sticky) consume a topic; a
// consumer of the consumer protocol joins, and the group becomes a
// consumer group whose classic members the broker drives; the
// partitions move to the newcomer incrementally, never owned by two
// members at once, and every record is consumed once. When it leaves, the
// classic members take its partitions back.
func TestClassicGroupUpgrade(t *testing.T) {
	const partitions, records = 6, 1200
	srv := start848Broker(t)
	topic, group := "orders-upgrade", "g-upgrade"
	admin := newClient(t, srv)
	createTopic(t, admin, topic, partitions)

	l := newLedger(0)
	c0 := startGroupConsumer(t, srv, "classic0", group, topic, l)
	c1 := startGroupConsumer(t, srv, "classic1", group, topic, l)
	waitBalanced(t, admin, group, partitions, c0, c1)
	w := watchOverlaps(c0, c1)

	producer := newSpreadProducer(t, srv, topic, partitions)
	want := producer.produce(records)
	eventually(t, func() bool { return l.distinct() >= records }, "the classic members consume")
	assert.Empty(t, w.finish(), "a partition owned twice by the classic members")

	stop := producer.background()
	c2 := startGroupConsumer(t, srv, "kip848", group, topic, l, kgo.ServerSideBalancer())
	w2 := watchOverlaps(c0, c1, c2)
	waitBalanced848(t, admin, group, partitions, c0, c1, c2)
	d := describe848(t, admin, group)
	assert.Equal(t, "Stable", d.State, "the group is a consumer group now")
	assert.Len(t, d.Members, 3, "with its classic members")
	all := stop()
	eventually(t, func() bool { return l.distinct() >= len(all) }, "every record is consumed after the upgrade")
	assert.Empty(t, w2.finish(), "a partition owned twice during the upgrade")
	assert.Empty(t, l.missing(all), "records never consumed")
	assert.Empty(t, l.duplicates(), "records consumed twice")
	assert.Subset(t, all, want)

	// The consumer-protocol member leaves: the group is classic again,
	// and the classic members take its partitions back.
	w = watchOverlaps(c0, c1)
	c2.Close()
	waitBalanced(t, admin, group, partitions, c0, c1)
	dg := describeGroup(t, admin, group)
	assert.Equal(t, "consumer", dg.ProtocolType, "a classic group again")
	assert.Equal(t, "cooperative-sticky", dg.Protocol)
	assert.Equal(t, kerr.GroupIDNotFound.Code, describe848(t, admin, group).ErrorCode, "no consumer group any more")
	more := producer.produce(records)
	eventually(t, func() bool { return l.distinct() >= len(all)+records }, "the classic members consume the rest")
	assert.Empty(t, w.finish(), "a partition owned twice after the consumer member left")
	assert.Empty(t, l.missing(append(all, more...)), "records never consumed")
	assert.Empty(t, l.duplicates(), "records consumed twice")
	for _, c := range []*groupConsumer{c0, c1, c2} {
		c.checkCommits()
	}
}
