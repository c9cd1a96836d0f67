package replica_test

import (
	"fmt"
	"time"

	"github.com/gopurgatory/purgatory/examples/broker/internal/batchtest"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// image is a LeaderEnv over a fixed metadata image that prints the ISR
// changes asked rather than send them.
type image struct {
	im *metadata.Image
	id metadata.TopicID
}

func (e image) State(p *storage.Partition) (metadata.Partition, bool) {
	st, err := e.im.Partition(e.id, p.Index())
	return st, err == nil
}

func (e image) Fenced(broker int32) bool { return e.im.Fenced(broker) }

func (e image) AskISR(_ *replica.Followers, st metadata.Partition, isr []int32) bool {
	fmt.Println("ask the controller: ISR", st.ISR, "->", isr)
	return false // not sent: the next check may ask again
}

// Broker 1 leads a partition on [1 2 3]: its high watermark is the
// smallest log end among the ISR, which the followers' fetches report.
func ExampleLeaders() {
	store, _ := storage.New(storage.WithRetentionCheckInterval(0))
	defer store.Close()
	topic, _ := store.CreateTopicSpec(storage.TopicSpec{Name: "t", Partitions: 1,
		Config: store.TopicDefaults(), ReplicationFactor: 3})
	p := topic.Partitions[0]
	id := metadata.TopicID(topic.ID)
	im := metadata.Empty()
	mt, _ := metadata.Place(im, []int32{1, 2, 3}, "t", id, 1, 3, nil)
	im = im.Apply(1, &metadata.Record{CreateTopics: []*metadata.Topic{mt}})

	now := time.Unix(1000, 0)
	leaders := replica.NewLeaders(1, image{im, id}, 10*time.Second, func() time.Time { return now })
	for _, v := range []string{"a", "b", "c"} {
		_, _ = p.Append(batchtest.Values(1, v))
		leaders.AfterAppend(p)
	}
	hw := func() int64 { o, _ := p.Offsets(); return o.HighWatermark }
	fmt.Println("high watermark after the appends:", hw())
	leaders.FollowerFetched(p, 2, 3)
	fmt.Println("broker 2 has everything:", hw())
	leaders.FollowerFetched(p, 3, 2)
	fmt.Println("broker 3 has two records:", hw())
	// Eleven seconds on, broker 2 fetches again, at the log end; broker 3
	// is still two records in: it has not caught up for longer than the
	// 10s lag allowed, and the leader asks to drop it from the ISR.
	now = now.Add(11 * time.Second)
	leaders.FollowerFetched(p, 2, 3)
	leaders.FollowerFetched(p, 3, 2)
	leaders.Shrink()
	// Output:
	// high watermark after the appends: 0
	// broker 2 has everything: 0
	// broker 3 has two records: 2
	// ask the controller: ISR [1 2 3] -> [1 2]
}
