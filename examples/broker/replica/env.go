package replica

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// leaderEnv is the broker as its Leaders see it: the image as this broker
// may act on it (State), and the controller to send its ISR changes.
type leaderEnv struct{ m *Manager }

var _ LeaderEnv = leaderEnv{}

func (e leaderEnv) State(p *storage.Partition) (metadata.Partition, bool) { return e.m.State(p) }

func (e leaderEnv) Fenced(broker int32) bool { return e.m.member.Image().Fenced(broker) }

func (e leaderEnv) AskISR(f *Followers, st metadata.Partition, isr []int32) bool {
	if e.m.member.Alone() {
		return false // a broker alone has no followers
	}
	e.m.alterPartition(f, st, isr)
	return true
}

// fetcherEnv is the broker as its Fetcher sees it: the image, and the
// peers to send its requests.
type fetcherEnv struct{ m *cluster.Member }

var _ FetcherEnv = fetcherEnv{}

func (e fetcherEnv) Image() *metadata.Image { return e.m.Image() }

func (e fetcherEnv) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return e.m.Request(ctx, broker, req)
}

// controllerEnv is the active controller as AlterPartition reaches it:
// this broker's own, or the quorum leader's through the peers.
type controllerEnv struct{ m *cluster.Member }

var _ ControllerEnv = controllerEnv{}

func (e controllerEnv) Local() *controller.Controller { return e.m.ActiveController() }

func (e controllerEnv) Leader() int32 {
	leader, _ := e.m.Leader()
	return leader
}

func (e controllerEnv) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return e.m.Request(ctx, broker, req)
}

// Start starts, in a cluster, a replica fetcher per other broker and the
// ISR check, every replica.lag.time.max.ms / 2 (Kafka's isr-expiration
// task), on the partitions this broker leads: goroutines of the Member's
// (Member.Go), which its Close stops. A broker alone has neither.
func (m *Manager) Start() {
	if m.member.Alone() {
		return
	}
	fc := m.cfg.Fetcher
	fc.Self, fc.BrokerEpoch = m.member.Self(), m.member.Epoch()
	fetcher := NewFetcher(fc, fetcherEnv{m.member}, m.store, m.log)
	m.member.Go(func(ctx context.Context) {
		for {
			t := time.NewTimer(m.cfg.LagTimeMax / 2)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			m.leaders.Shrink()
		}
	})
	for _, id := range m.member.Peers() {
		m.member.Go(func(ctx context.Context) { fetcher.Run(ctx, id) })
	}
}

// alterPartition asks the active controller, in the background, to set the
// ISR of pr's partition, which this broker leads at st, to isr
// (replica.AlterPartition). What the controller commits reaches this
// broker through the metadata log, and pr's change in flight ends when
// this broker's image has it (Followers' settle), not with the answer,
// which may come first: until then the follower being added still counts
// for the high watermark, as the committed ISR already holds it (and may
// already have made it the leader, completing a reassignment). A change
// refused, or not answered, ends with the answer.
func (m *Manager) alterPartition(pr *Followers, st metadata.Partition, isr []int32) {
	p := pr.Partition()
	m.log.Info("asking the controller to change an ISR", zap.String("topic", p.Topic().Name),
		zap.Int32("partition", p.Index()), zap.Int32s("isr", st.ISR), zap.Int32s("new_isr", isr))
	m.member.Go(func(ctx context.Context) {
		actx, cancel := context.WithTimeout(ctx, cluster.ControllerTimeout)
		defer cancel()
		err := AlterPartition(actx, controllerEnv{m.member}, m.member.Self(), m.member.Epoch(), pr, st, isr)
		if err != nil {
			pr.Done(st.PartitionEpoch)
		}
		if err != nil && ctx.Err() == nil {
			m.log.Info("the controller did not change an ISR", zap.String("topic", p.Topic().Name),
				zap.Int32("partition", p.Index()), zap.Error(err))
		}
	})
}
