package txn

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gopurgatory/purgatory/examples/broker/coordinator"
	"github.com/gopurgatory/purgatory/timer"
)

// asyncLog is a fakeLog whose writes are durable on a goroutine of their
// own, as the Produce purgatory answers them.
type asyncLog struct {
	*fakeLog
	wg *sync.WaitGroup
}

func (l asyncLog) Append(txnID string, batch []byte, minISR bool) (func(done func(error)), error) {
	wait, err := l.fakeLog.Append(txnID, batch, minISR)
	if err != nil {
		return nil, err
	}
	return func(done func(error)) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			wait(done)
		}()
	}, nil
}

// asyncMarkers writes markers on a goroutine of their own, one in four
// failing with a retriable error.
type asyncMarkers struct{ wg *sync.WaitGroup }

func (w asyncMarkers) WriteMarkers(_ Marker, parts []TopicPartition, done func(map[TopicPartition]error)) {
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		res := make(map[TopicPartition]error, len(parts))
		for _, tp := range parts {
			if rand.IntN(4) == 0 {
				res[tp] = fmt.Errorf("not leader")
			}
		}
		done(res)
	}()
}

// TestConcurrentRequests: requests of a few ids from many goroutines,
// with writes and markers ending on others, the clock moving and the
// partition moving away and back, are each answered exactly once, and the
// race detector finds nothing.
func TestConcurrentRequests(t *testing.T) {
	var wg sync.WaitGroup
	log := asyncLog{newFakeLog(1), &wg}
	clk := timer.NewManualClock(0)
	var nextID atomic.Int64
	c, err := New(log, Config{Markers: asyncMarkers{&wg}, Clock: clk, Wall: func() time.Time { return wallStart },
		NextProducerID:   func() (int64, error) { return nextID.Add(1), nil },
		OffsetsPartition: func(g string) int32 { return coordinator.PartitionFor(g, 50) }})
	require.NoError(t, err)
	log.setLoaded(0, true)
	_, err = c.Load(0, 1, &Replay{})
	require.NoError(t, err)

	var issued, answered atomic.Int64
	answer := func() func(*kerr.Error) {
		issued.Add(1)
		var once atomic.Bool
		return func(*kerr.Error) {
			if !once.CompareAndSwap(false, true) {
				t.Errorf("answered twice")
			}
			answered.Add(1)
		}
	}
	ids := []string{"a", "b", "c"}
	var reqs sync.WaitGroup
	for g := range 6 {
		reqs.Add(1)
		go func() {
			defer reqs.Done()
			for i := range 300 {
				id := ids[(g+i)%len(ids)]
				d := c.Describe([]string{id})[0]
				pid, epoch := d.ProducerID, d.ProducerEpoch
				parts := []TopicPartition{{Topic: "t", Partition: int32(i % 4)}}
				switch rand.IntN(6) {
				case 0:
					f := answer()
					c.InitProducerID(id, time.Second, -1, -1, func(int64, int16, *kerr.Error) { f(nil) })
				case 1, 2:
					c.AddPartitions(id, pid, epoch, parts, answer())
				case 3:
					c.EndTxn(id, pid, epoch, rand.IntN(2) == 0, answer())
				case 4:
					c.VerifyPartitions(id, pid, epoch, parts)
					c.List(nil, nil, -1)
				case 5:
					c.AddOffsets(id, pid, epoch, "g", answer())
				}
			}
		}()
	}
	reqs.Add(1)
	go func() {
		defer reqs.Done()
		for i := range 50 {
			clk.Advance(100 * time.Millisecond)
			if i%10 == 9 {
				log.setLoaded(0, false)
				c.Unload(0, nil)
				log.setLoaded(0, true)
				_, _ = c.Load(0, int32(i), log.replay(t, 0))
			}
		}
	}()
	reqs.Wait()
	// Let what is under way end: writes, markers, and their retries on
	// the clock.
	for range 20 {
		wg.Wait()
		clk.Advance(time.Second)
	}
	require.NoError(t, c.Close())
	wg.Wait()
	assert.Equal(t, issued.Load(), answered.Load(), "every request answered")
}
