package tail

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/gopurgatory/purgatory/examples/proxy/cache"
	"github.com/gopurgatory/purgatory/examples/proxy/upstream"
)

// fetcher long-polls one upstream leader for every partition tailed from
// it, on a connection of its own, until none is left.
type fetcher struct {
	m    *Manager
	node int32
	conn *upstream.Conn // the fetcher's alone
}

// REQUIRES: m.mu held.
func (m *Manager) newFetcherLocked(node int32) (*fetcher, error) {
	conn, err := m.cl.Dial(node)
	if err != nil {
		return nil, err
	}
	f := &fetcher{m: m, node: node, conn: conn}
	m.wg.Add(1)
	go f.run()
	return f, nil
}

// round returns the tails to fetch now, after stopping those idle or whose
// leadership moved; with none left, the fetcher is removed, under the same
// lock, so that a Start either sees it gone or finds its tail fetched.
func (f *fetcher) round() []*Tail {
	m := f.m
	now := m.cfg.now().UnixNano()
	m.mu.Lock()
	var tails, ended []*Tail
	var reasons []error
	for _, t := range m.tails {
		if t.Leader != f.node {
			continue
		}
		leader, epoch, ok := m.cl.Leader(t.Topic, t.Partition)
		switch {
		case now-t.lastUsed.Load() > int64(m.cfg.idle):
			ended, reasons = append(ended, t), append(reasons, ErrIdle)
		case ok && (leader != t.Leader || (epoch >= 0 && t.Epoch >= 0 && epoch != t.Epoch)):
			// The metadata names another leader. One it does not know
			// yet (a new topic) leaves the tail to its leader's answers.
			ended, reasons = append(ended, t), append(reasons, fmt.Errorf("%w: leader %d epoch %d, was %d epoch %d", ErrLeaderMoved, leader, epoch, t.Leader, t.Epoch))
		default:
			tails = append(tails, t)
		}
	}
	if len(tails) == 0 && !m.closed && m.fetchers[f.node] == f {
		delete(m.fetchers, f.node)
	}
	m.mu.Unlock()
	for i, t := range ended {
		m.stop(t, reasons[i])
	}
	return tails
}

type fetchResult struct {
	resp kmsg.Response
	err  error
	at   time.Time // when it arrived
}

func (f *fetcher) run() {
	m := f.m
	defer m.wg.Done()
	defer func() {
		f.conn.Close()
		<-f.conn.Done()
	}()
	var changed []*Tail // from the last answer, told once the next fetch is out
	for {
		tails := f.round()
		if len(tails) == 0 || m.ctx.Err() != nil {
			f.tell(changed)
			return
		}
		if f.conn.Dead() {
			// The last fetch failed and stopped the tails it held; these
			// started since, and get a new connection.
			<-f.conn.Done()
			conn, err := m.cl.Dial(f.node)
			if err != nil {
				f.stopAll(tails, err)
				continue
			}
			f.conn = conn
		}
		req := f.request(tails)
		ch := make(chan fetchResult, 1)
		f.conn.Send(req, func(resp kmsg.Response, err error) { ch <- fetchResult{resp, err, m.cfg.now()} })
		m.metrics.fetches.Inc()
		f.tell(changed)
		changed = nil
		var res fetchResult
		select {
		case res = <-ch:
		case <-m.ctx.Done():
			return // Close stops the tails
		}
		if res.err != nil {
			m.log.Debug("tail fetch failed", zap.Int32("node", f.node), zap.Error(res.err))
			f.stopAll(tails, res.err)
			m.cl.Refresh()
			continue
		}
		changed = f.absorb(tails, req, res.resp.(*kmsg.FetchResponse), res.at)
	}
}

// stopAll stops tails after their fetch failed with err.
func (f *fetcher) stopAll(tails []*Tail, err error) {
	err = fmt.Errorf("%w: broker %d: %w", ErrFetch, f.node, err)
	for _, t := range tails {
		f.m.stop(t, err)
	}
}

// tell calls notify for each tail whose cache changed; a stopped tail was
// told already.
func (f *fetcher) tell(changed []*Tail) {
	for _, t := range changed {
		if t.Err() == nil {
			f.m.notify(t.TP)
		}
	}
}

// request builds one fetch of every tail from its cache's end: a consumer's
// (replica id -1), read_uncommitted, sessionless, at the highest version
// upstream serves, or v12 if a topic's id is unknown (v13+ names topics by
// id only).
func (f *fetcher) request(tails []*Tail) *kmsg.FetchRequest {
	cfg := &f.m.cfg
	req := kmsg.NewPtrFetchRequest()
	version := f.m.cl.KnownVersions().Max(kmsg.Fetch)
	for _, t := range tails {
		if t.TopicID == ([16]byte{}) {
			version = min(version, 12)
		}
	}
	req.SetVersion(max(version, 4))
	req.ReplicaID = -1
	req.ReplicaState.ID = -1
	req.MaxWaitMillis = int32(cfg.maxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = cfg.maxBytes
	req.IsolationLevel = 0
	req.SessionID = 0
	req.SessionEpoch = -1
	byTopic := make(map[string]int)
	for _, t := range tails {
		i, ok := byTopic[t.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[t.Topic] = i
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = t.Partition
		rp.CurrentLeaderEpoch = t.Epoch
		rp.FetchOffset = t.Cache.End()
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = cfg.partitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req
}

// absorb appends each partition's batches to its tail's cache, or stops
// the tail on an error, and returns the tails whose cache changed; those
// that got records note when the answer arrived (Tail.Appended).
func (f *fetcher) absorb(tails []*Tail, req *kmsg.FetchRequest, resp *kmsg.FetchResponse, at time.Time) []*Tail {
	m := f.m
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		f.stopAll(tails, err)
		return nil
	}
	byName := make(map[TP]*Tail, len(tails))
	byID := make(map[[16]byte]string, len(tails))
	for _, t := range tails {
		byName[t.TP] = t
		byID[t.TopicID] = t.Topic
	}
	var changed []*Tail
	refresh := false
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		topic := rt.Topic
		if req.Version >= 13 {
			topic = byID[rt.TopicID]
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			t := byName[TP{topic, rp.Partition}]
			if t == nil {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				m.stop(t, fmt.Errorf("%w: %s-%d at offset %d: %w", ErrFetch, t.Topic, t.Partition, t.Cache.End(), err))
				refresh = refresh || movedLeadership(err)
				continue
			}
			before := t.Cache.State()
			n, err := t.Cache.Append(rp.RecordBatches, cache.State{
				HighWatermark: rp.HighWatermark, LastStable: rp.LastStableOffset, LogStart: rp.LogStartOffset})
			if err != nil {
				m.stop(t, fmt.Errorf("%w: %s-%d: %w", ErrFetch, t.Topic, t.Partition, err))
				continue
			}
			m.metrics.appended.Add(float64(n))
			if n > 0 {
				t.appended.Store(at.UnixNano())
			}
			if n > 0 || t.Cache.State() != before {
				changed = append(changed, t)
			}
		}
	}
	if refresh {
		m.cl.Refresh()
	}
	return changed
}

// movedLeadership reports whether a partition error means the metadata is
// stale.
func movedLeadership(err error) bool {
	for _, e := range []error{kerr.NotLeaderForPartition, kerr.FencedLeaderEpoch, kerr.UnknownLeaderEpoch,
		kerr.LeaderNotAvailable, kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.OffsetOutOfRange} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
