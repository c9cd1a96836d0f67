package server

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/plugin/kzap"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/metadata"
	"github.com/gopurgatory/purgatory/examples/broker/replica"
)

// peers is this broker's side of the cluster's conversation in the Kafka
// protocol, through one kgo client per other broker (kmsg requests sent to
// that broker alone); the metadata quorum talks over Raft's own transport
// (package metalog):
//
//   - a replica fetcher per broker, for the partitions it leads that this
//     one follows (replica.Fetcher);
//   - the heartbeat to the active controller, every
//     broker.heartbeat.interval.ms, and at once when the quorum's leader
//     changes (heartbeat.go);
//   - the ISR check, every replica.lag.time.max.ms / 2 (Kafka's
//     isr-expiration task), on the partitions this broker leads, and the
//     AlterPartition requests it and the followers' fetches send the
//     controller;
//   - topic creations that a Metadata request asks of a broker that is not
//     the controller, forwarded to it.
//
// Nothing here runs for a broker alone.
type peers struct {
	s       *Server
	clients map[int32]*kgo.Client // by node id: every broker but this one
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	kick    chan struct{} // a heartbeat now: the controller changed
	epoch   int64         // this broker's incarnation, its broker epoch; immutable
	// stopping is set by a controlled shutdown: no more heartbeats.
	stopping atomic.Bool
	fetcher  *replica.Fetcher // immutable
}

func newPeers(s *Server) (*peers, error) {
	ps := &peers{s: s, clients: make(map[int32]*kgo.Client), kick: make(chan struct{}, 1), epoch: time.Now().UnixNano()}
	for _, n := range s.cl.nodes {
		if n.id == s.cl.self {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.ClientID("broker-"+strconv.Itoa(int(s.cl.self))),
			kgo.DialTimeout(time.Second),
			kgo.WithLogger(kzap.New(s.log.Named("peer"), kzap.Level(kgo.LogLevelError))))
		if err != nil {
			ps.closeClients()
			return nil, err
		}
		ps.clients[n.id] = cl
	}
	ps.fetcher = replica.NewFetcher(replica.FetcherConfig{
		Self: s.cl.self, BrokerEpoch: ps.epoch,
		WaitMax: s.cfg.ReplicaFetchWaitMax, MinBytes: s.cfg.ReplicaFetchMinBytes,
		MaxBytes: s.cfg.ReplicaFetchMaxBytes, Backoff: s.cfg.ReplicaFetchBackoff,
	}, fetcherEnv{ps}, s.data.store, s.log)
	ps.ctx, ps.stop = context.WithCancel(context.Background())
	return ps, nil
}

// start runs the fetchers, the heartbeat and the ISR check.
func (ps *peers) start() {
	ps.run(ps.heartbeat)
	ps.run(ps.checkISR)
	for id := range ps.clients {
		ps.run(func() { ps.fetcher.Run(ps.ctx, id) })
	}
}

func (ps *peers) run(f func()) {
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		f()
	}()
}

// close stops every goroutine and client, waiting for them.
func (ps *peers) close() {
	ps.stop()
	ps.wg.Wait()
	ps.closeClients()
}

func (ps *peers) closeClients() {
	for _, cl := range ps.clients {
		cl.Close()
	}
}

// request sends req to broker id alone.
func (ps *peers) request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	cl := ps.clients[id]
	if cl == nil {
		return nil, errors.New("no such broker")
	}
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// sleep waits d, or less if the peers are stopping; it reports whether to
// go on.
func (ps *peers) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ps.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// checkISR asks the controller to shrink the ISR of the partitions this
// broker leads whose followers lag.
func (ps *peers) checkISR() {
	for ps.sleep(ps.s.cfg.ReplicaLagTimeMax / 2) {
		ps.s.leaders.Shrink()
	}
}

// alterPartition asks the active controller, in the background, to set the
// ISR of pr's partition, which this broker leads at st, to isr
// (replica.AlterPartition); pr's change in flight ends with the answer.
// What the controller commits reaches this broker through the metadata
// log.
func (ps *peers) alterPartition(pr *replica.Followers, st metadata.Partition, isr []int32) {
	p := pr.Partition()
	ps.s.log.Info("asking the controller to change an ISR", zap.String("topic", p.Topic().Name),
		zap.Int32("partition", p.Index()), zap.Int32s("isr", st.ISR), zap.Int32s("new_isr", isr))
	ps.run(func() {
		defer pr.Done(st.PartitionEpoch)
		ctx, cancel := context.WithTimeout(ps.ctx, controllerTimeout)
		defer cancel()
		err := replica.AlterPartition(ctx, controllerEnv{ps}, ps.s.cl.self, ps.epoch, pr, st, isr)
		if err != nil && ps.ctx.Err() == nil {
			ps.s.log.Info("the controller did not change an ISR", zap.String("topic", p.Topic().Name),
				zap.Int32("partition", p.Index()), zap.Error(err))
		}
	})
}

// createAtController asks the active controller to create topic name, as
// a metadata request that auto-creates it on this broker needs. Its answer
// is only logged: the topic reaches this broker through the metadata log,
// and the client, answered LEADER_NOT_AVAILABLE meanwhile, retries.
func (ps *peers) createAtController(name string, partitions int32, rf int16, configs map[string]string) {
	leader, _ := ps.s.meta.Leader()
	if leader < 0 {
		return
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	ctx, cancel := context.WithTimeout(ps.ctx, 5*time.Second)
	defer cancel()
	resp, err := ps.request(ctx, leader, req)
	if err == nil {
		if ts := resp.(*kmsg.CreateTopicsResponse).Topics; len(ts) == 1 && ts[0].ErrorCode != kerr.TopicAlreadyExists.Code {
			err = kerr.ErrorForCode(ts[0].ErrorCode)
		}
	}
	if err != nil {
		ps.s.log.Info("asking the controller to create a topic", zap.String("topic", name), zap.Error(err))
	}
}
