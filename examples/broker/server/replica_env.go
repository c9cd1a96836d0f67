package server

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// leaderEnv is the broker as replica.Leaders sees it: the image as this
// broker may act on it (leaderState), and the peers to send the
// controller its ISR changes.
type leaderEnv struct{ s *Server }

var _ replica.LeaderEnv = leaderEnv{}

func (e leaderEnv) State(p *storage.Partition) (metadata.Partition, bool) { return e.s.leaderState(p) }

func (e leaderEnv) Fenced(broker int32) bool { return e.s.image().Fenced(broker) }

func (e leaderEnv) AskISR(f *replica.Followers, st metadata.Partition, isr []int32) bool {
	if e.s.peers == nil {
		return false // a broker alone has no followers
	}
	e.s.peers.alterPartition(f, st, isr)
	return true
}

// fetcherEnv is the broker as its replica.Fetcher sees it: the image, and
// the peers to send its requests.
type fetcherEnv struct{ ps *peers }

var _ replica.FetcherEnv = fetcherEnv{}

func (e fetcherEnv) Image() *metadata.Image { return e.ps.s.image() }

func (e fetcherEnv) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return e.ps.request(ctx, broker, req)
}

// controllerEnv is the active controller as replica.AlterPartition
// reaches it: this broker's own, or the quorum leader's through the peers.
type controllerEnv struct{ ps *peers }

var _ replica.ControllerEnv = controllerEnv{}

func (e controllerEnv) Local() *controller.Controller {
	if e.ps.s.ctrl.IsActive() {
		return e.ps.s.ctrl
	}
	return nil
}

func (e controllerEnv) Leader() int32 {
	leader, _ := e.ps.s.meta.Leader()
	return leader
}

func (e controllerEnv) Request(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	return e.ps.request(ctx, broker, req)
}
