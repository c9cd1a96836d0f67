package server

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/plugin/kzap"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/storage"
)

// peers is this broker's side of the cluster's conversation, all of it in
// the Kafka protocol through one kgo client per other broker (kmsg
// requests sent to that broker alone):
//
//   - a replica fetcher per broker that leads partitions this one follows
//     (replica_fetcher.go);
//   - a metadata poll of every other broker each metadata.poll.interval.ms:
//     the controller's topics are mirrored here, with their ids (a broker
//     that is not the controller creates and deletes no topic of its own),
//     and each leader's ISR is kept for this broker's Metadata answers;
//   - the ISR check, every replica.lag.time.max.ms / 2 (Kafka's
//     isr-expiration task), on the partitions this broker leads.
//
// Nothing here runs for a broker alone.
type peers struct {
	s       *Server
	clients map[int32]*kgo.Client // by node id: every broker but this one
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup

	mu   sync.Mutex
	isrs map[int32]map[tp][]int32 // by leader: the ISRs of its partitions, as its last metadata said
}

func newPeers(s *Server) (*peers, error) {
	ps := &peers{s: s, clients: make(map[int32]*kgo.Client), isrs: make(map[int32]map[tp][]int32)}
	for _, n := range s.cl.nodes {
		if n.id == s.cl.self {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()), kgo.ClientID("broker-"+strconv.Itoa(int(s.cl.self))),
			kgo.WithLogger(kzap.New(s.log.Named("peer"), kzap.Level(kgo.LogLevelError))))
		if err != nil {
			ps.closeClients()
			return nil, err
		}
		ps.clients[n.id] = cl
	}
	ps.ctx, ps.stop = context.WithCancel(context.Background())
	return ps, nil
}

// start runs the fetchers, the metadata poll and the ISR check.
func (ps *peers) start() {
	ps.run(ps.pollMetadata)
	ps.run(ps.checkISR)
	for id := range ps.clients {
		ps.run(func() { ps.fetchFrom(id) })
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
func (ps *peers) request(id int32, req kmsg.Request) (kmsg.Response, error) {
	cl := ps.clients[id]
	if cl == nil {
		return nil, errors.New("no such broker")
	}
	return cl.SeedBrokers()[0].Request(ps.ctx, req)
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

// isrOf returns the ISR that p's leader last reported, or nil.
func (ps *peers) isrOf(p *storage.Partition) []int32 {
	leader := ps.s.cl.leaderOf(p.Index())
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.isrs[leader][tp{p.Topic().Name, p.Index()}]
}

// checkISR shrinks the ISR of the partitions this broker leads, and
// completes what waited on a high watermark that moved as a result.
func (ps *peers) checkISR() {
	for ps.sleep(ps.s.cfg.ReplicaLagTimeMax / 2) {
		for _, p := range ps.s.leaders.shrink() {
			ps.s.log.Info("ISR shrank", zap.String("topic", p.Topic().Name), zap.Int32("partition", p.Index()),
				zap.Int32s("isr", ps.s.leaders.isr(p)))
			ps.s.wake(p)
		}
	}
}

// pollMetadata asks every other broker for its metadata, every
// metadata.poll.interval.ms.
func (ps *peers) pollMetadata() {
	for {
		for id := range ps.clients {
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = nil // every topic
			resp, err := ps.request(id, req)
			if err != nil {
				if ps.ctx.Err() == nil {
					ps.s.log.Debug("metadata poll", zap.Int32("broker", id), zap.Error(err))
				}
				continue
			}
			mr := resp.(*kmsg.MetadataResponse)
			ps.noteISRs(id, mr)
			if id == ps.s.cl.controller() {
				ps.mirrorTopics(mr)
			}
		}
		if !ps.sleep(ps.s.cfg.MetadataPollInterval) {
			return
		}
	}
}

// noteISRs keeps the ISR of each partition broker id leads, replacing
// what it said before (so that deleted topics are forgotten).
func (ps *peers) noteISRs(id int32, mr *kmsg.MetadataResponse) {
	isrs := make(map[tp][]int32)
	for _, t := range mr.Topics {
		if t.Topic == nil || t.ErrorCode != 0 {
			continue
		}
		for _, p := range t.Partitions {
			if p.Leader == id && p.ErrorCode == 0 {
				isrs[tp{*t.Topic, p.Partition}] = p.ISR
			}
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.isrs[id] = isrs
}

// mirrorTopics makes this broker's topics the controller's: those it lacks
// are created with the controller's id, partitions, replication factor
// and configs (read with DescribeConfigs: Metadata does not carry them);
// those the controller no longer has, or has under another id, are
// deleted. Only the other brokers call it: the controller has no peer
// client to itself.
func (ps *peers) mirrorTopics(mr *kmsg.MetadataResponse) {
	store := ps.s.data.store
	want := make(map[string]storage.TopicSpec, len(mr.Topics))
	for _, t := range mr.Topics {
		if t.Topic == nil || t.ErrorCode != 0 || len(t.Partitions) == 0 {
			continue
		}
		want[*t.Topic] = storage.TopicSpec{Name: *t.Topic, ID: storage.TopicID(t.TopicID),
			Partitions: int32(len(t.Partitions)), Config: store.TopicDefaults(),
			ReplicationFactor: int16(len(t.Partitions[0].Replicas))}
	}
	for _, t := range store.Topics() {
		if w, ok := want[t.Name]; ok && w.ID == t.ID {
			delete(want, t.Name)
			continue
		}
		if _, err := store.DeleteTopicByID(t.ID); err != nil && !errors.Is(err, storage.ErrUnknownTopic) {
			ps.s.log.Warn("deleting a topic the controller no longer has", zap.String("topic", t.Name), zap.Error(err))
		}
		ps.s.wakeDeleted(t)
		ps.s.log.Info("deleted topic, as the controller did", zap.String("topic", t.Name))
	}
	for _, spec := range want {
		var err error
		if spec.Config, err = ps.topicConfig(spec.Name, spec.Config); err != nil {
			ps.s.log.Debug("reading a topic's configs from the controller", zap.String("topic", spec.Name), zap.Error(err))
			continue // the next poll tries again
		}
		if _, err := store.CreateTopicSpec(spec); err != nil {
			ps.s.log.Warn("creating a topic the controller has", zap.String("topic", spec.Name), zap.Error(err))
			continue
		}
		ps.s.log.Info("created topic, as the controller did", zap.String("topic", spec.Name),
			zap.Int32("partitions", spec.Partitions), zap.Int16("replication_factor", spec.ReplicationFactor))
	}
}

// createAtController asks the controller to create topic name, as a
// metadata request that auto-creates it on this broker needs. Its answer
// is only logged: the topic reaches this broker by the metadata poll,
// and the client, answered LEADER_NOT_AVAILABLE meanwhile, retries.
func (ps *peers) createAtController(name string, partitions int32, rf int16) {
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := ps.request(ps.s.cl.controller(), req)
	if err == nil {
		if ts := resp.(*kmsg.CreateTopicsResponse).Topics; len(ts) == 1 && ts[0].ErrorCode != kerr.TopicAlreadyExists.Code {
			err = kerr.ErrorForCode(ts[0].ErrorCode)
		}
	}
	if err != nil {
		ps.s.log.Warn("asking the controller to create a topic", zap.String("topic", name), zap.Error(err))
	}
}

// topicConfig returns cfg with topic's configs as the controller has them.
// A config this broker does not know is left out.
func (ps *peers) topicConfig(topic string, cfg storage.TopicConfig) (storage.TopicConfig, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	req.Resources = append(req.Resources, rr)
	resp, err := ps.request(ps.s.cl.controller(), req)
	if err != nil {
		return cfg, err
	}
	rs := resp.(*kmsg.DescribeConfigsResponse).Resources
	if len(rs) != 1 {
		return cfg, errors.New("describe configs: the answer does not match the request")
	}
	if err := kerr.ErrorForCode(rs[0].ErrorCode); err != nil {
		return cfg, err
	}
	for _, c := range rs[0].Configs {
		if next, err := cfg.With(c.Name, c.Value); err == nil {
			cfg = next
		}
	}
	return cfg, nil
}
