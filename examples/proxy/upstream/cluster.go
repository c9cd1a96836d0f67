package upstream

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Broker is an upstream broker as its metadata lists it.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack *string
}

// Addr returns host:port.
func (b Broker) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))) }

// Cluster is the upstream cluster: its metadata, versions and coordinators,
// and the proxy's own connections to it. See the package documentation.
type Cluster struct {
	cfg     config // immutable
	log     *zap.Logger
	metrics *metrics
	ctx     context.Context // cancelled by Close: stops dials
	cancel  context.CancelFunc
	kick    chan struct{} // capacity 1: refresh the metadata soon
	wg      sync.WaitGroup

	mu sync.Mutex // guards the following
	// brokers are those of the latest metadata; seeds are ids -1, -2, ...
	// for the bootstrap addresses.
	brokers      map[int32]Broker
	seeds        map[int32]string
	controller   int32
	topics       map[string]*Topic
	names        map[[16]byte]string
	versions     Versions        // served by every broker handshaken; nil before the first
	handshaken   map[string]bool // by address
	waiters      []func(Versions, error)
	coordinators map[coordinatorKey]int32
	backoff      map[string]*dialBackoff // by address
	own          map[int32]*Conn         // the cluster's own connections
	retired      []*Conn                 // own connections replaced, to wait for at Close
	next         int                     // round robin of Any
	closed       bool
}

type coordinatorKey struct {
	typ int8 // 0: group, 1: transaction
	key string
}

type dialBackoff struct {
	until time.Time
	wait  time.Duration
	err   error
}

// New returns the cluster seeded with WithSeeds and starts its metadata
// loop, which handshakes and refreshes at once; nothing is dialled before.
func New(opts ...Option) (*Cluster, error) {
	cfg := defaults()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.reg)
	if err != nil {
		return nil, err
	}
	cl := &Cluster{
		cfg: cfg, log: cfg.log, metrics: m, kick: make(chan struct{}, 1),
		brokers: make(map[int32]Broker), seeds: make(map[int32]string), controller: -1,
		topics: make(map[string]*Topic), names: make(map[[16]byte]string),
		handshaken: make(map[string]bool), coordinators: make(map[coordinatorKey]int32),
		backoff: make(map[string]*dialBackoff), own: make(map[int32]*Conn),
	}
	for i, s := range cfg.seeds {
		cl.seeds[int32(-1-i)] = s
	}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	cl.wg.Add(1)
	go cl.run()
	return cl, nil
}

// Close stops the metadata loop, closes the cluster's own connections and
// waits for their goroutines. Sessions and dedicated connections are their
// owners' to close. Waiters for the versions are answered ErrClosed.
func (cl *Cluster) Close() {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return
	}
	cl.closed = true
	conns := append(cl.retired, values(cl.own)...)
	cl.own, cl.retired = nil, nil
	waiters := cl.waiters
	cl.waiters = nil
	cl.mu.Unlock()
	cl.cancel()
	for _, c := range conns {
		c.Close()
	}
	cl.wg.Wait()
	for _, c := range conns {
		<-c.Done()
	}
	for _, w := range waiters {
		w(nil, ErrClosed)
	}
}

func values[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// Dial opens a connection of its own to broker node, for a caller that
// needs one no one else queues behind (a tail's long poll). The caller
// closes it.
func (cl *Cluster) Dial(node int32) (*Conn, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return nil, ErrClosed
	}
	addr, ok := cl.addrLocked(node)
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownBroker, node)
	}
	return cl.newConn(node, addr, cl.cfg.clientID), nil
}

// Addr returns the address of broker node (a seed's for a negative id).
func (cl *Cluster) Addr(node int32) (string, bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.addrLocked(node)
}

// REQUIRES: cl.mu held.
func (cl *Cluster) addrLocked(node int32) (string, bool) {
	if node < 0 {
		a, ok := cl.seeds[node]
		return a, ok
	}
	b, ok := cl.brokers[node]
	return b.Addr(), ok
}

// Any returns a broker to send a request any broker can answer: the known
// brokers in turn, skipping those backing off, or the seeds before any
// metadata came.
func (cl *Cluster) Any() int32 {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	ids := make([]int32, 0, len(cl.brokers))
	for id := range cl.brokers {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		for id := range cl.seeds {
			ids = append(ids, id)
		}
	}
	sortIDs(ids)
	now := time.Now()
	for range ids {
		cl.next++
		id := ids[cl.next%len(ids)]
		addr, _ := cl.addrLocked(id)
		if b := cl.backoff[addr]; b == nil || now.After(b.until) {
			return id
		}
	}
	cl.next++
	return ids[cl.next%len(ids)] // every one backs off: it fails fast
}

func sortIDs(ids []int32) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}

// Brokers returns the brokers of the latest metadata.
func (cl *Cluster) Brokers() []Broker {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	out := values(cl.brokers)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].ID < out[j-1].ID; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Controller returns the controller's id, or -1 when unknown.
func (cl *Cluster) Controller() int32 {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.controller
}

// Coordinator returns the coordinator found for a group (typ 0) or a
// transactional id (typ 1).
func (cl *Cluster) Coordinator(typ int8, key string) (int32, bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n, ok := cl.coordinators[coordinatorKey{typ, key}]
	return n, ok
}

// SetCoordinator records the coordinator FindCoordinator named.
func (cl *Cluster) SetCoordinator(typ int8, key string, node int32) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.coordinators[coordinatorKey{typ, key}] = node
}

// ForgetCoordinator drops the coordinator of key, after it answered
// NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE.
func (cl *Cluster) ForgetCoordinator(typ int8, key string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	delete(cl.coordinators, coordinatorKey{typ, key})
}

// dial connects to addr, unless it failed recently (ErrBackoff).
func (cl *Cluster) dial(addr string) (net.Conn, error) {
	cl.mu.Lock()
	if b := cl.backoff[addr]; b != nil && time.Now().Before(b.until) {
		err := b.err
		cl.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrBackoff, err)
	}
	cl.mu.Unlock()
	d := net.Dialer{Timeout: cl.cfg.dialTimeout}
	nc, err := d.DialContext(cl.ctx, "tcp", addr)
	if err == nil {
		var secured net.Conn
		if secured, err = cl.secure(nc, addr); err != nil {
			_ = nc.Close()
		}
		nc = secured
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if err != nil {
		b := cl.backoff[addr]
		if b == nil {
			b = &dialBackoff{wait: cl.cfg.reconnectBackoff}
			cl.backoff[addr] = b
		} else {
			b.wait = min(2*b.wait, cl.cfg.reconnectBackoffMax)
		}
		b.until, b.err = time.Now().Add(b.wait), err
		return nil, fmt.Errorf("%w: %w", errDial, err)
	}
	delete(cl.backoff, addr)
	return nc, nil
}

// ownConn returns the cluster's own connection to node, opening one if
// there is none alive.
func (cl *Cluster) ownConn(node int32) (*Conn, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return nil, ErrClosed
	}
	addr, ok := cl.addrLocked(node)
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrUnknownBroker, node)
	}
	if c := cl.own[node]; c != nil {
		if !c.Dead() && c.addr == addr {
			return c, nil
		}
		c.Close()
		cl.retired = append(prune(cl.retired), c)
	}
	c := cl.newConn(node, addr, cl.cfg.clientID)
	cl.own[node] = c
	return c, nil
}

// prune drops the connections whose goroutines have returned.
func prune(cs []*Conn) []*Conn {
	out := cs[:0]
	for _, c := range cs {
		select {
		case <-c.Done():
		default:
			out = append(out, c)
		}
	}
	return out
}

// Send sends req to node on the cluster's own connection, for the proxy's
// own requests that queue behind nothing long (never a long poll).
func (cl *Cluster) Send(node int32, req kmsg.Request, done func(kmsg.Response, error)) {
	c, err := cl.ownConn(node)
	if err != nil {
		done(nil, err)
		return
	}
	c.Send(req, done)
}

// Refresh asks for a metadata refresh soon (after metadata.min.age since
// the last), for when an answer says leadership moved.
func (cl *Cluster) Refresh() {
	select {
	case cl.kick <- struct{}{}:
	default:
	}
}

// run refreshes the metadata at start, every metadata.max.age, and when
// kicked; after a failure it tries again after the reconnect backoff.
func (cl *Cluster) run() {
	defer cl.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-cl.ctx.Done():
			return
		case <-timer.C:
		case <-cl.kick:
			timer.Stop()
		}
		start := time.Now()
		err := cl.refresh()
		wait := cl.cfg.metadataMaxAge
		if err != nil {
			if cl.ctx.Err() != nil {
				return
			}
			cl.log.Warn("upstream metadata refresh failed", zap.Error(err))
			wait = cl.cfg.reconnectBackoff
		}
		// At most one refresh per metadata.min.age, however often kicked.
		if rest := cl.cfg.metadataMinAge - time.Since(start); rest > 0 {
			select {
			case <-cl.ctx.Done():
				return
			case <-time.After(rest):
			}
		}
		timer.Reset(wait)
	}
}

// refresh handshakes the broker it picks if needed, then reads the
// metadata of every topic from it.
func (cl *Cluster) refresh() error {
	node := cl.Any()
	c, err := cl.ownConn(node)
	if err != nil {
		return err
	}
	vs, err := cl.handshake(c)
	if err != nil {
		cl.answerWaiters(nil, fmt.Errorf("%w: %w", ErrNoVersions, err))
		return err
	}
	cl.answerWaiters(vs, nil)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(min(req.MaxVersion(), vs.max(kmsg.Metadata, 12)))
	req.Topics = nil // every topic
	req.AllowAutoTopicCreation = false
	resp, err := c.Do(cl.ctx, req)
	if err != nil {
		return err
	}
	cl.Absorb(resp.(*kmsg.MetadataResponse), true)
	// Every broker's versions count: a client may be sent to any of them.
	for _, b := range cl.Brokers() {
		cl.mu.Lock()
		done := cl.handshaken[b.Addr()]
		cl.mu.Unlock()
		if !done {
			if bc, err := cl.ownConn(b.ID); err == nil {
				cl.handshakeAsync(bc)
			}
		}
	}
	return nil
}

// Absorb takes in a metadata response: the brokers, the controller, and
// the topics it lists; with all (the request asked for every topic) the
// topics it does not list are dropped.
func (cl *Cluster) Absorb(resp *kmsg.MetadataResponse, all bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return
	}
	if len(resp.Brokers) > 0 {
		cl.brokers = make(map[int32]Broker, len(resp.Brokers))
		for _, b := range resp.Brokers {
			cl.brokers[b.NodeID] = Broker{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack}
		}
	}
	if resp.Version >= 1 {
		cl.controller = resp.ControllerID
	}
	seen := make(map[string]bool, len(resp.Topics))
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		if rt.Topic == nil {
			continue
		}
		name := *rt.Topic
		switch rt.ErrorCode {
		case 0:
		case kerr.UnknownTopicOrPartition.Code:
			cl.dropTopicLocked(name)
			continue
		default:
			// LEADER_NOT_AVAILABLE while a topic is being created, say:
			// keep what was known.
			seen[name] = cl.topics[name] != nil
			continue
		}
		seen[name] = true
		cl.setTopicLocked(rt, resp.Version)
	}
	if all {
		for name := range cl.topics {
			if !seen[name] {
				cl.dropTopicLocked(name)
			}
		}
	}
}

// answerWaiters answers those waiting in Versions with the outcome of a
// handshake.
func (cl *Cluster) answerWaiters(vs Versions, err error) {
	cl.mu.Lock()
	ws := cl.waiters
	cl.waiters = nil
	cl.mu.Unlock()
	for _, w := range ws {
		w(vs, err)
	}
}
