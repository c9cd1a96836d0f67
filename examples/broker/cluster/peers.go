package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/broker/controller"
)

// peers is this broker's side of the cluster's conversation in the Kafka
// protocol, through kgo clients of each other broker (kmsg requests sent
// to that broker alone); the metadata quorum talks over Raft's own
// transport (package metalog). A broker answers the requests of a
// connection in order, so a request whose answer waits (for replication,
// for a transaction's markers, for an election) holds back everything
// sent after it on its connection. The requests go over one client of
// each peer per Channel, so that none waits behind a request that may
// itself wait for it, as Kafka gives its fetchers, its marker channel,
// its AddPartitionsToTxnManager and its forwarding manager a network
// client each:
//
//   - Replication: the heartbeat to the active controller, every
//     broker.heartbeat.interval.ms, and at once when the quorum's leader
//     changes (heartbeat.go); a replica fetcher's requests to each broker
//     that leads partitions this one follows, and the AlterPartition
//     requests a leader sends the controller (Member.Request, on
//     goroutines package replica starts with Member.Go);
//   - Markers: the transaction coordinator's WriteTxnMarkers, answered
//     only once its markers are replicated, which may wait for the
//     OffsetForLeaderEpoch of a follower's truncation on Replication; and
//     the share-state requests sent to a share coordinator, which write
//     to its state topic;
//   - Transactions: a partition leader's AddPartitionsToTxn to a
//     transaction's coordinator (KIP-890), which, adding a partition at
//     transaction version 2, waits for the producer's previous
//     transaction's markers: on Replication it held back the very
//     fetches those markers' replication waited for, until the request
//     timed out;
//   - Forwarding: the admin requests a broker forwards to the active
//     controller for a client (CreateTopics, ElectLeaders, ...), some
//     answered only when done, and the topic creations a Metadata request
//     asks of it (CreateAtController).
//
// Nothing here exists for a broker alone.
type peers struct {
	m *Member
	// clients are the clients of every broker but this one, by channel
	// and node id.
	clients [numChannels]map[int32]*kgo.Client
	kick    chan struct{} // a heartbeat now: the controller changed
	epoch   int64         // this broker's incarnation, its broker epoch; immutable
	// stopping is set by a controlled shutdown: no more heartbeats.
	stopping atomic.Bool

	// The session as this broker counts it (session.go).
	started     time.Time    // immutable
	lastRenewed atomic.Int64 // since started: the sending of the last heartbeat answered
	// wasCurrent and everCurrent are the heartbeat goroutine's own.
	wasCurrent, everCurrent bool
}

// peerClientIDPrefix begins the client id of this broker's requests to
// its peers ("broker-1").
const peerClientIDPrefix = "broker-"

// FromPeer reports whether clientID is that of a broker's request to its
// peers. It proves nothing (a client may send any id): a broker uses it
// only to decline to forward such a request again, so that two brokers
// that each believe the other leads cannot pass one to and fro.
func FromPeer(clientID string) bool { return strings.HasPrefix(clientID, peerClientIDPrefix) }

func newPeers(m *Member) (*peers, error) {
	ps := &peers{m: m, kick: make(chan struct{}, 1), epoch: time.Now().UnixNano(), started: time.Now()}
	ps.lastRenewed.Store(-int64(m.cfg.SessionTimeout)) // none yet
	self := m.brokers.self
	for _, n := range m.brokers.nodes {
		if n.ID == self {
			continue
		}
		for ch := range ps.clients {
			if ps.clients[ch] == nil {
				ps.clients[ch] = make(map[int32]*kgo.Client)
			}
			opts := []kgo.Opt{kgo.SeedBrokers(n.Addr()), kgo.ClientID(peerClientIDPrefix + strconv.Itoa(int(self))),
				kgo.DialTimeout(time.Second),
				kgo.WithLogger(peerLogger{log: m.log.Named("peer"), closing: &m.closing})}
			if m.cfg.PeerTLS != nil {
				opts = append(opts, kgo.DialTLSConfig(m.cfg.PeerTLS))
			}
			cl, err := kgo.NewClient(opts...)
			if err != nil {
				ps.closeClients()
				return nil, err
			}
			ps.clients[ch][n.ID] = cl
		}
	}
	return ps, nil
}

func (ps *peers) closeClients() {
	for _, clients := range ps.clients {
		for _, cl := range clients {
			cl.Close()
		}
	}
}

// Channel is one of the connections a broker keeps to each peer (see
// peers): a request waits only behind those sent on its own.
type Channel int

// The channels, by what goes over them (see peers).
const (
	Replication Channel = iota
	Markers
	Transactions
	Forwarding
	numChannels
)

// request sends req to broker id alone, on Replication.
func (ps *peers) request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	return ps.requestOn(ctx, Replication, id, req)
}

func (ps *peers) requestOn(ctx context.Context, ch Channel, id int32, req kmsg.Request) (kmsg.Response, error) {
	cl := ps.clients[ch][id]
	if cl == nil {
		return nil, errors.New("no such broker")
	}
	return cl.SeedBrokers()[0].Request(ctx, req)
}

// Request sends req to broker id alone, on Replication: what a replica
// fetcher and an ISR change send. A broker alone has no one to send it
// to.
func (m *Member) Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	return m.RequestOn(ctx, Replication, id, req)
}

// RequestOn sends req to broker id alone, over this broker's connection
// to it for ch, which no request of another channel waits behind.
func (m *Member) RequestOn(ctx context.Context, ch Channel, id int32, req kmsg.Request) (kmsg.Response, error) {
	if m.peers == nil {
		return nil, errors.New("no such broker")
	}
	return m.peers.requestOn(ctx, ch, id, req)
}

// Peers returns the other brokers' ids, ascending.
func (m *Member) Peers() []int32 {
	var out []int32
	for _, id := range m.brokers.IDs() {
		if id != m.brokers.self {
			out = append(out, id)
		}
	}
	return out
}

// ActiveController returns this broker's controller if it is the active
// one, else nil: an ISR change then goes to the quorum's leader (Leader)
// over Request.
func (m *Member) ActiveController() *controller.Controller {
	if m.ctrl.IsActive() {
		return m.ctrl
	}
	return nil
}

// CreateAtController asks the active controller to create topic name, as
// a metadata request that auto-creates it on this broker needs. Its answer
// is only logged: the topic reaches this broker through the metadata log,
// and the client, answered LEADER_NOT_AVAILABLE meanwhile, retries. A
// broker alone is its own controller: there is nobody to ask.
func (m *Member) CreateAtController(name string, partitions int32, rf int16, configs map[string]string) {
	if m.peers == nil {
		return
	}
	leader, _ := m.meta.Leader()
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
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	resp, err := m.peers.requestOn(ctx, Forwarding, leader, req)
	if err == nil {
		if ts := resp.(*kmsg.CreateTopicsResponse).Topics; len(ts) == 1 && ts[0].ErrorCode != kerr.TopicAlreadyExists.Code {
			err = kerr.ErrorForCode(ts[0].ErrorCode)
		}
	}
	if err != nil {
		m.log.Info("asking the controller to create a topic", zap.String("topic", name), zap.Error(err))
	}
}
