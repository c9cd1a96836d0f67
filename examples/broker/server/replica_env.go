package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/cluster"
	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// ctrl returns this broker's controller, which decides only while active.
func (s *Server) ctrl() *controller.Controller { return s.member.Controller() }

// leaderEnv is the broker as replica.Leaders sees it: the image as this
// broker may act on it (leaderState), and the controller to send its ISR
// changes.
type leaderEnv struct{ s *Server }

var _ replica.LeaderEnv = leaderEnv{}

func (e leaderEnv) State(p *storage.Partition) (metadata.Partition, bool) { return e.s.leaderState(p) }

func (e leaderEnv) Fenced(broker int32) bool { return e.s.image().Fenced(broker) }

func (e leaderEnv) AskISR(f *replica.Followers, st metadata.Partition, isr []int32) bool {
	if e.s.member.Alone() {
		return false // a broker alone has no followers
	}
	e.s.alterPartition(f, st, isr)
	return true
}

// fetcherEnv is the broker as its replica.Fetcher sees it: the image, and
// the peers to send its requests.
type fetcherEnv struct{ m *cluster.Member }

var _ replica.FetcherEnv = fetcherEnv{}

func (e fetcherEnv) Image() *metadata.Image { return e.m.Image() }

func (e fetcherEnv) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return e.m.Request(ctx, broker, req)
}

// controllerEnv is the active controller as replica.AlterPartition
// reaches it: this broker's own, or the quorum leader's through the peers.
type controllerEnv struct{ m *cluster.Member }

var _ replica.ControllerEnv = controllerEnv{}

func (e controllerEnv) Local() *controller.Controller { return e.m.ActiveController() }

func (e controllerEnv) Leader() int32 {
	leader, _ := e.m.Leader()
	return leader
}

func (e controllerEnv) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return e.m.Request(ctx, broker, req)
}

// startReplication starts, in a cluster, a replica fetcher per other
// broker and the ISR check, every replica.lag.time.max.ms / 2 (Kafka's
// isr-expiration task), on the partitions this broker leads.
func (s *Server) startReplication() {
	if s.member.Alone() {
		return
	}
	fetcher := replica.NewFetcher(replica.FetcherConfig{
		Self: s.brokers.Self(), BrokerEpoch: s.member.Epoch(),
		WaitMax: s.cfg.ReplicaFetchWaitMax, MinBytes: s.cfg.ReplicaFetchMinBytes,
		MaxBytes: s.cfg.ReplicaFetchMaxBytes, Backoff: s.cfg.ReplicaFetchBackoff,
	}, fetcherEnv{s.member}, s.data.store, s.log)
	s.member.Go(func(ctx context.Context) {
		for {
			t := time.NewTimer(s.cfg.ReplicaLagTimeMax / 2)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			s.leaders.Shrink()
		}
	})
	for _, id := range s.member.Peers() {
		s.member.Go(func(ctx context.Context) { fetcher.Run(ctx, id) })
	}
}

// alterPartition asks the active controller, in the background, to set the
// ISR of pr's partition, which this broker leads at st, to isr
// (replica.AlterPartition); pr's change in flight ends with the answer.
// What the controller commits reaches this broker through the metadata
// log.
func (s *Server) alterPartition(pr *replica.Followers, st metadata.Partition, isr []int32) {
	p := pr.Partition()
	s.log.Info("asking the controller to change an ISR", zap.String("topic", p.Topic().Name),
		zap.Int32("partition", p.Index()), zap.Int32s("isr", st.ISR), zap.Int32s("new_isr", isr))
	s.member.Go(func(ctx context.Context) {
		defer pr.Done(st.PartitionEpoch)
		actx, cancel := context.WithTimeout(ctx, controllerTimeout)
		defer cancel()
		err := replica.AlterPartition(actx, controllerEnv{s.member}, s.brokers.Self(), s.member.Epoch(), pr, st, isr)
		if err != nil && ctx.Err() == nil {
			s.log.Info("the controller did not change an ISR", zap.String("topic", p.Topic().Name),
				zap.Int32("partition", p.Index()), zap.Error(err))
		}
	})
}
